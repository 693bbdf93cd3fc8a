"""The `kafka-wire` command line; each subcommand lives in cli/commands/.

Only the module of the subcommand being run is imported (`kafka-wire serve` must not pay for the
client tools' imports: TLS, SASL, the wire client); `--help` and unknown commands get them all.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import sys

from . import commands
from .structured_logs import configure_logging


def _base_parser(add_help: bool = True) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-wire", description="A Kafka-compatible broker.", add_help=add_help)
    parser.add_argument("--log-level", default="INFO", help="Python logging level (default INFO)")
    parser.add_argument("--log-format", choices=("text", "json"), default="text",
                        help="text lines (default) or one JSON object per line")
    return parser


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with every subcommand, or with only `command`'s when its module is named so
    (`dump-log` lives in dump_log.py)."""
    parser = _base_parser()
    subparsers = parser.add_subparsers(dest="command", required=True)
    module_name = command.replace("-", "_") if command else None
    if module_name and module_name.isidentifier() and importlib.util.find_spec(
            f"{commands.__name__}.{module_name}") is not None:
        importlib.import_module(f"{commands.__name__}.{module_name}").register(subparsers)
        if command in subparsers.choices:
            return parser
        parser = _base_parser()
        subparsers = parser.add_subparsers(dest="command", required=True)
    commands.register_all(subparsers)
    return parser


def _command_in(argv: list[str]) -> str | None:
    """The subcommand named in argv (after the global options), or None."""
    _, rest = _base_parser(add_help=False).parse_known_args(argv)
    return rest[0] if rest and not rest[0].startswith("-") else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(_command_in(argv)).parse_args(argv)
    configure_logging(getattr(logging, args.log_level.upper(), logging.INFO), args.log_format, sys.stderr)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
