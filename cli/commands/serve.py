"""`kafka-wire serve`: run a broker with Kafka's property names."""

from __future__ import annotations

import asyncio
import gc
import importlib
import logging
import signal
import sys
import time

from log.errors import LogDirFailure

from broker import task_dump
from broker.config import BrokerConfig, ConfigError

logger = logging.getLogger("kafka_wire")


def freeze_startup_heap() -> None:
    """Move every object alive once the broker has started (modules, codecs, the loaded logs and
    coordinator state) out of the garbage collector's view (gc.freeze).

    A full collection otherwise walks all of them each time, with the event loop stopped: about
    100 ms for a freshly started broker (30,000 tracked objects) and more with each loaded
    partition, measured on the loaded benchmark machine (bench/PROFILE.md, end-to-end latency).
    Frozen objects are never collected: a reference cycle among them that later becomes garbage
    stays in memory, which bounds that cost by the start-up heap. O(1): no collection runs here.
    """
    gc.freeze()


async def serve(config: BrokerConfig, started: float) -> int:
    from broker.node import Broker
    from broker.server import KafkaServer, start_console_on, start_metrics, start_registry_on

    if config["zookeeper.connect"]:
        from broker.cluster.cluster_broker import ClusterBroker as Broker

    # SIGTERM/SIGINT from the first moment: clients may be served while later listeners are still
    # being bound (each bind awaits), and a stop asked then is a clean stop once started.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    task_dump.install(loop)  # kill -USR1: every task's stack in the log
    broker = Broker(config)  # creates and validates the log dirs (LogDirFailure)
    try:
        broker.load()
    except OSError as exc:
        raise broker.logs.load_failure(exc) from exc
    # Replaying the internal topics before listening means clients never see COORDINATOR_LOAD_IN_PROGRESS.
    await broker.start_coordinators()
    server = KafkaServer(broker)
    broker.server = server
    metrics = None
    console = None
    registry = None
    try:
        if config["metrics.port"] is not None:
            # Before the listeners: once clients can connect, their requests are being counted.
            metrics = await start_metrics(broker, config)
        await server.start()
        if config["console.port"] is not None:
            # Imported only when asked for: a broker without the console starts as before.
            from console import start_console

            console = await start_console_on(broker, config, start_console)
        if config["schema.registry.port"] is not None:
            # Imported only when asked for, as the console is, and on a thread: the listeners are
            # open, and Kafka clients are answered while the registry's parsers load.
            registry_module = await asyncio.to_thread(importlib.import_module, "registry")
            registry = await start_registry_on(broker, config, registry_module.start_registry)
    except BaseException:
        # A listener that cannot be bound (or a listener's TLS/SASL settings refused) ends the
        # start: what was opened closes, and the logs are closed cleanly.
        await server.stop()
        if metrics is not None:
            await metrics.stop()
        if console is not None:
            await console.stop()
        if registry is not None:
            await registry.stop()
        await broker.stop_coordinators()
        broker.close()
        raise
    broker.start_background_tasks()
    freeze_startup_heap()
    logger.info("kafka-wire started in %.3f s (node.id=%d, cluster.id=%s, log.dirs=%s)",
             time.monotonic() - started, broker.node_id, broker.metadata.cluster_id,
             ",".join(config.log_dirs))
    await stop.wait()
    logger.info("shutting down")
    # In a cluster, leadership moves to other brokers while this one still answers.
    await broker.controlled_shutdown()
    if console is not None:
        await console.stop()
    if registry is not None:
        await registry.stop()
    await server.stop()
    if metrics is not None:
        await metrics.stop()
    await broker.stop_coordinators()
    broker.close()
    logger.info("shut down cleanly")
    return 0


def run(args) -> int:
    """Exit status 2 for a configuration Kafka would refuse, 1 for a log dir or an address that
    cannot be used; either way one line on stderr naming what and why, never a traceback."""
    started = time.monotonic()
    try:
        config = BrokerConfig.load(args.config, args.set)
    except ConfigError as exc:
        print(f"kafka-wire: {exc}", file=sys.stderr)
        return 2
    for warning in config.unknown_key_warnings():
        logger.warning("%s", warning)
    from broker.server import BindError

    try:
        return _serve(config, started)
    except ConfigError as exc:
        print(f"kafka-wire: {exc}", file=sys.stderr)
        return 2
    except (LogDirFailure, BindError) as exc:
        print(f"kafka-wire: {exc}", file=sys.stderr)
        return 1


def _schema_lookup(broker):
    """Schema id validation on produce reads `_schemas` (registry/validation.py, imported at the
    first produce to a topic that validates)."""
    from registry.validation import SchemaSubjects

    return SchemaSubjects(broker)


def _serve(config: BrokerConfig, started: float) -> int:
    """One process, or with num.worker.processes > 1 the supervisor of the workers."""
    from broker.node import Broker
    from broker.workers.ownership import worker_count

    Broker.schema_lookup_factory = _schema_lookup

    count = worker_count(config)
    if count > 1:
        from broker.workers.supervisor import Supervisor

        # Every module a worker needs is imported before the fork (broker/workers/supervisor.py),
        # the CRC-32C of record batches too: a single process imports it at its first produce
        # (start-to-ready), each worker would import it again (85 ms of CPU each, py-spy).
        import broker.handlers  # noqa: F401
        import broker.node  # noqa: F401
        from kafka_wire.records import crc32c

        if config["zookeeper.connect"]:
            import broker.cluster.cluster_broker  # noqa: F401
        crc32c(b"")

        start_console = start_registry = None
        if config["console.port"] is not None:
            from console import start_console
        if config["schema.registry.port"] is not None:
            from registry import start_registry
        return Supervisor(config, count, started, start_console, start_registry).run()
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    return runner(serve(config, started))


def register(subparsers) -> None:
    parser = subparsers.add_parser("serve", help="run a broker")
    parser.add_argument("--config", help="a server.properties file (Kafka's property names)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override one property, e.g. --set log.dirs=/tmp/data (repeatable)")
    parser.set_defaults(func=run)
