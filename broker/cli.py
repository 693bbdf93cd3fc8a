"""The `kafka-wire` command line: `kafka-wire serve --config server.properties --set key=value`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import time

from .config import BrokerConfig, ConfigError

log = logging.getLogger("kafka_wire")


def _setup_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s [%(name)s] %(message)s",
        stream=sys.stderr,
    )


async def _serve(config: BrokerConfig, started: float) -> int:
    from .node import Broker
    from .server import KafkaServer

    broker = Broker(config)
    broker.load()
    server = KafkaServer(broker)
    broker.server = server
    await server.start()
    broker.start_background_tasks()
    log.info("kafka-wire started in %.3f s (node.id=%d, cluster.id=%s, log.dirs=%s)",
             time.monotonic() - started, broker.node_id, broker.metadata.cluster_id,
             ",".join(config.log_dirs))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting down")
    await server.stop()
    broker.close()
    log.info("shut down cleanly")
    return 0


def cmd_serve(args) -> int:
    started = time.monotonic()
    try:
        config = BrokerConfig.load(args.config, args.set)
    except (ConfigError, OSError) as exc:
        print(f"kafka-wire: {exc}", file=sys.stderr)
        return 2
    try:
        import uvloop  # noqa: F401

        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    return runner(_serve(config, started))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-wire", description="A Kafka-compatible broker.")
    parser.add_argument("--log-level", default="INFO", help="Python logging level (default INFO)")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run a broker")
    serve.add_argument("--config", help="a server.properties file (Kafka's property names)")
    serve.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override one property, e.g. --set log.dirs=/tmp/data (repeatable)")
    serve.set_defaults(func=cmd_serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _setup_logging(args.log_level)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
