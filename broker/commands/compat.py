"""`kafka-wire compat`: run the compatibility suite (real clients, librdkafka's own tests) and print the matrix."""

from __future__ import annotations

from pathlib import Path


def run_reference(args) -> int:
    """`kafka-wire compat reference`: the real Apache Kafka, KRaft single node, until Ctrl-C."""
    import signal
    import threading

    from compat.reference_kafka import ReferenceKafkaFailure, ReferenceKafkaUnavailable, running_reference_kafka

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    print(f"kafka-wire compat: resolving Apache Kafka {args.kafka_version} (Maven Central, cached in .deps/)",
          flush=True)
    try:
        with running_reference_kafka(args.kafka_version, data_dir=args.data_dir, port=args.port) as kafka:
            print(f"Apache Kafka {kafka.version} (KRaft, node.id={kafka.NODE_ID}) ready: bootstrap {kafka.bootstrap}",
                  flush=True)
            print(f"data and log in {kafka.data_dir}; Ctrl-C stops it", flush=True)
            while not stop.wait(0.5):
                if not kafka.is_running():
                    print(f"Apache Kafka exited with status {kafka.process.returncode}\n{kafka.log_report()}")
                    return 1
    except (ReferenceKafkaFailure, ReferenceKafkaUnavailable) as error:
        print(f"kafka-wire compat reference: {error}")
        return 1
    return 0


def run(args) -> int:
    if getattr(args, "compat_command", None) == "reference":
        return run_reference(args)
    if args.against_kafka:
        from compat.conformance.run import main as conformance_main

        return conformance_main(args.against_kafka, quick=args.quick, scenarios=args.scenarios,
                                report=Path(args.results) if args.results else None)
    from compat.runner import DEFAULT_KAFKA_VERSION, RESULTS_PATH, Options, main

    tests = None
    if args.tests:
        tests = [name.strip() for name in args.tests.split(",") if name.strip()]
    options = Options(
        bootstrap=args.bootstrap,
        quick=args.quick,
        clients=not args.no_clients,
        librdkafka=not args.no_librdkafka,
        tests=tests,
        kafka_version=args.kafka_version or DEFAULT_KAFKA_VERSION,
        workers=args.workers,
        process_timeout=args.test_timeout,
        results_path=Path(args.results) if args.results else RESULTS_PATH,
        log_dir=Path(args.log_dir) if args.log_dir else None,
        grow_allowlist=args.grow_allowlist,
    )
    return main(options)


def register(subparsers) -> None:
    from compat.reference_kafka import KAFKA_4

    parser = subparsers.add_parser(
        "compat", help="run real Kafka clients and librdkafka's test suite against a broker; print the matrix",
        description="Runs the client checks (kafka-python, aiokafka, confluent-kafka, kcat, kafkajs, Java "
                    "kafka-clients 3.9.0 and 4.3.0, Spark's call sequence) and librdkafka's own integration "
                    "tests against a broker (started here unless --bootstrap is given), prints a client x "
                    "feature matrix and writes compat/RESULTS.md. Exit status 1 when a client check or an "
                    "allowlisted librdkafka test fails.")
    parser.add_argument("--bootstrap", metavar="HOST:PORT",
                        help="test this running broker instead of starting one (librdkafka's 'noautocreate' "
                             "scenario tests are then excluded)")
    parser.add_argument("--quick", action="store_true",
                        help="CI form: smaller client runs and only the allowlisted librdkafka tests")
    parser.add_argument("--tests", metavar="LIST",
                        help="librdkafka tests to run, by number or name, comma-separated (default: all; "
                             "with --quick: the allowlist)")
    parser.add_argument("--no-clients", action="store_true", help="skip the client programs")
    parser.add_argument("--no-librdkafka", action="store_true", help="skip librdkafka's test suite")
    parser.add_argument("--kafka-version", help="TEST_KAFKA_VERSION for librdkafka's tests (default 3.9.0)")
    parser.add_argument("--workers", type=int, default=3, help="librdkafka test processes at once (default 3)")
    parser.add_argument("--test-timeout", type=float, default=300.0,
                        help="seconds one librdkafka test process may take (default 300)")
    parser.add_argument("--results", metavar="PATH",
                        help="where to write the results (default compat/RESULTS.md, and .json beside it)")
    parser.add_argument("--log-dir", metavar="DIR", help="keep brokers' data and all logs here")
    parser.add_argument("--grow-allowlist", action="store_true",
                        help="append librdkafka tests that ran and passed to compat/librdkafka-allowlist.txt")
    parser.add_argument("--against-kafka", metavar="VERSION",
                        help="run the differential conformance suite instead: every scenario against Apache Kafka "
                             "VERSION (started here) and against kafka-wire, answers compared field by field; "
                             "writes compat/CONFORMANCE.md")
    parser.add_argument("--scenarios", metavar="LIST",
                        help="with --against-kafka: only these scenarios (comma-separated names or prefixes)")
    parser.set_defaults(func=run)
    sub = parser.add_subparsers(dest="compat_command", metavar="{reference}")
    reference = sub.add_parser(
        "reference", help="run the reference Apache Kafka (KRaft single node) until Ctrl-C",
        description="Resolves Apache Kafka VERSION from Maven Central (cached in .deps/ and ~/.m2), formats its "
                    "storage and runs it as a KRaft single node (broker and controller), printing its bootstrap.")
    reference.add_argument("--kafka-version", default=KAFKA_4, help="Apache Kafka version (default %(default)s)")
    reference.add_argument("--port", type=int, help="its PLAINTEXT port (default: a free one)")
    reference.add_argument("--data-dir", help="where its data and log go (default: a temporary directory)")
    reference.set_defaults(func=run)
