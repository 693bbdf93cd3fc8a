"""The `kafka-wire` command line; each subcommand lives in broker/commands/."""

from __future__ import annotations

import argparse
import logging
import sys

from .commands import register_all
from .structured_logs import configure_logging


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-wire", description="A Kafka-compatible broker.")
    parser.add_argument("--log-level", default="INFO", help="Python logging level (default INFO)")
    parser.add_argument("--log-format", choices=("text", "json"), default="text",
                        help="text lines (default) or one JSON object per line")
    register_all(parser.add_subparsers(dest="command", required=True))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging(getattr(logging, args.log_level.upper(), logging.INFO), args.log_format, sys.stderr)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
