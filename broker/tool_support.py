"""What the client tools (`kafka-wire topics|groups|produce|consume`) share: the connection
options, error reporting, Kafka's Uuid spelling and its left-aligned tables."""

from __future__ import annotations

import base64
import functools
import re
import sys
import uuid

from .wire_client import ClusterClient, KafkaError, UnsupportedVersion


def add_connection_arguments(parser) -> None:
    parser.add_argument("--bootstrap-server", "--bootstrap", dest="bootstrap_server", required=True,
                        metavar="HOST:PORT", help="broker(s) to connect to, comma separated")
    parser.add_argument("--request-timeout-ms", type=int, default=30000,
                        help="how long to wait for a broker's answer (default 30000)")
    parser.add_argument("--client-id", default="kafka-wire-tools", help="client.id sent with requests")


def connect(args) -> ClusterClient:
    return ClusterClient(args.bootstrap_server, timeout=args.request_timeout_ms / 1000, client_id=args.client_id)


class ToolError(Exception):
    """A failure the tool reports in one line and exits 1 for (Kafka's tools print the same way)."""


def reports_errors(run):
    """Turn errors a broker or the network causes into one line on stderr and exit status 1."""

    @functools.wraps(run)
    def wrapper(args) -> int:
        try:
            return run(args)
        except ToolError as error:
            print(f"Error: {error}", file=sys.stderr)
        except KafkaError as error:
            print(f"Error: {error}", file=sys.stderr)
        except UnsupportedVersion as error:
            print(f"Error: {error}", file=sys.stderr)
        except (OSError, ConnectionError) as error:
            print(f"Error: cannot reach {args.bootstrap_server}: {error}", file=sys.stderr)
        except KeyboardInterrupt:
            return 130
        return 1

    return wrapper


def kafka_uuid(value: uuid.UUID | None) -> str:
    """A topic id as Kafka prints it (Uuid.toString: URL-safe base64 of the 16 bytes, unpadded)."""
    if value is None:
        value = uuid.UUID(int=0)
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def parse_key_values(items: list[str], what: str) -> dict[str, str]:
    """`k=v` items, each possibly `k1=v1,k2=v2` (a value may hold commas: `cleanup.policy=compact,delete`
    is one config, since a comma only starts a new one when a `key=` follows)."""
    configs: dict[str, str] = {}
    for item in items:
        for part in re.split(r",(?=[A-Za-z0-9_.\-]+=)", item):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise ToolError(f"Invalid {what} '{part}': expected key=value")
            configs[key.strip()] = value.strip()
    return configs


def split_names(items: list[str]) -> list[str]:
    return [name.strip() for item in items for name in item.split(",") if name.strip()]


def print_table(header: list[str], rows: list[list[object]], min_widths: list[int] | None = None,
                out=None) -> None:
    """Left-aligned columns separated by a space, each as wide as its widest cell (at least
    min_widths), the last one unpadded: the layout of Kafka's command-line tools."""
    out = out or sys.stdout
    cells = [header] + [["-" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    if min_widths:
        widths = [max(w, m) for w, m in zip(widths, min_widths)]
    for row in cells:
        line = " ".join(cell.ljust(width) for cell, width in zip(row[:-1], widths[:-1]))
        print(f"{line} {row[-1]}".rstrip() if len(row) > 1 else row[0], file=out)
