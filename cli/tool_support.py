"""What the client tools (`kafka-wire topics|groups|configs|produce|consume|acls|users`) share: the connection
options (--bootstrap-server, and --command-config: Kafka's client properties file for TLS and
SASL), error reporting, Kafka's Uuid spelling and its left-aligned tables."""

from __future__ import annotations

import base64
import functools
import re
import sys
import uuid

from client import (
    ClientConfigError,
    ClientSecurity,
    ClusterClient,
    ConnectionClosed,
    KafkaError,
    UnsupportedVersion,
)
from kafka_wire.properties import MalformedProperties, parse_properties

COMMAND_CONFIG_HELP = ("Kafka client properties for a secured listener: security.protocol, sasl.mechanism, "
                       "sasl.jaas.config, ssl.truststore.location (PEM), ssl.keystore.location, "
                       "ssl.endpoint.identification.algorithm")


def add_connection_arguments(parser, config_aliases: tuple[str, ...] = ()) -> None:
    """--bootstrap-server and friends; `config_aliases` are the other names a Kafka tool gives
    --command-config (kafka-console-producer.sh's --producer.config)."""
    parser.add_argument("--bootstrap-server", "--bootstrap", dest="bootstrap_server", required=True,
                        metavar="HOST:PORT", help="broker(s) to connect to, comma separated")
    add_command_config_argument(parser, config_aliases)
    parser.add_argument("--request-timeout-ms", type=int, default=30000,
                        help="how long to wait for a broker's answer (default 30000)")
    parser.add_argument("--client-id", default="kafka-wire-tools", help="client.id sent with requests")


def add_command_config_argument(parser, config_aliases: tuple[str, ...] = ()) -> None:
    parser.add_argument("--command-config", *config_aliases, dest="command_config", metavar="FILE",
                        help=COMMAND_CONFIG_HELP)


def client_security(args) -> ClientSecurity | None:
    """The security settings of --command-config, or None without one (a PLAINTEXT listener)."""
    path = getattr(args, "command_config", None)
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            props = parse_properties(f.read())
        return ClientSecurity.from_properties(props)
    except OSError as error:
        raise ToolError(f"cannot read the client properties {path}: {error.strerror or error}") from None
    except (ClientConfigError, MalformedProperties) as error:
        raise ToolError(f"{path}: {error}") from None


def connect(args) -> ClusterClient:
    return ClusterClient(args.bootstrap_server, timeout=args.request_timeout_ms / 1000, client_id=args.client_id,
                         security=client_security(args))


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
            print(f"Error: cannot reach {args.bootstrap_server}: {error}{connection_hint(args, error)}",
                  file=sys.stderr)
        except KeyboardInterrupt:
            return 130
        return 1

    return wrapper


def connection_hint(args, error: BaseException) -> str:
    """Why a broker may hang up on a tool: a secured listener and no (or the wrong) client settings."""
    text = str(error)
    # ClusterClient folds a failed first connection into one message, hence the text checks; a TLS
    # client that a plaintext listener hangs up on sees an unexpected EOF in the handshake.
    closed = isinstance(error, ConnectionClosed) or any(
        sign in text for sign in ("connection closed by the broker", "UNEXPECTED_EOF", "WRONG_VERSION_NUMBER"))
    if not closed:
        return ""
    if getattr(args, "command_config", None):
        return " (does security.protocol in the client properties match the listener?)"
    return " (a listener with SSL or SASL needs --command-config with security.protocol and its settings)"


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
