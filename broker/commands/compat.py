"""`kafka-wire compat`: run the compatibility suite (real clients, librdkafka's own tests) and print the matrix."""

from __future__ import annotations

from pathlib import Path


def run(args) -> int:
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
    parser.set_defaults(func=run)
