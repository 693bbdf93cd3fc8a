"""`kafka-wire compat`: run the compatibility suite (real clients, librdkafka's own tests) and print the matrix."""

from __future__ import annotations

from pathlib import Path

# franz-go's quick form (CI) runs this many kgo test processes at once, each against its own broker
# (whose counting proxy then sees that process only): they mostly wait on the broker.
QUICK_PARALLEL = 3

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


def run_franz_go(args) -> int:
    """`kafka-wire compat franz-go`: franz-go's own kgo integration tests against kafka-wire (or Apache Kafka)."""
    import functools
    import sys

    from compat import franz_go_suite as franz_go

    try:
        binary = franz_go.ensure_built()
    except franz_go.SuiteUnavailable as problem:
        print(f"kafka-wire compat franz-go: {problem}")
        return 1
    log_dir = Path(args.log_dir) if args.log_dir else franz_go.temporary_log_dir()
    if args.against_kafka:
        target = functools.partial(franz_go.reference_kafka_target, args.against_kafka, tls=not args.no_tls)
    else:
        target = functools.partial(franz_go.kafka_wire_target, tls=not args.no_tls)
    tests = [name.strip() for name in args.tests.split(",") if name.strip()] if args.tests else None
    records = args.records if args.records is not None else (franz_go.QUICK_RECORDS if args.quick
                                                             else franz_go.FULL_RECORDS)
    try:
        report = franz_go.run(binary=binary, target_factory=target, tests=tests, quick=args.quick, records=records,
                              timeout=args.test_timeout, log_dir=log_dir, tls=not args.no_tls,
                              grow=args.grow_allowlist and not args.against_kafka,
                              say=lambda line: print(line, flush=True),
                              parallel=args.parallel or (QUICK_PARALLEL if args.quick and not args.against_kafka else 1))
    except franz_go.SuiteUnavailable as problem:  # e.g. no openssl for the TLS listener's certificate
        print(f"kafka-wire compat franz-go: {problem}")
        return 1
    print(franz_go.summary_text(report))
    results = Path(args.results) if args.results else (None if tests or args.quick else franz_go.RESULTS_PATH)
    if results is not None:
        franz_go.write_results(report, "kafka-wire compat franz-go " + " ".join(sys.argv[3:]), results)
        print(f"results written to {results} (logs in {log_dir})")
    return 0 if report.ok else 1


def run_faults(args) -> int:
    """`kafka-wire compat faults`: Jepsen-style faults (compat/faults/), writes compat/FAULTS.md."""
    from compat.faults.run import FAULTS_PATH, RESULTS_DIR, main as faults_main

    # The full form (and --resume) stores its results in compat/faults-results/ and renders FAULTS.md
    # from all of them; other forms write only where told (--results, --results-dir).
    full = args.resume or not (args.quick or args.nemesis or args.workload)
    report = Path(args.results) if args.results else (FAULTS_PATH if full else None)
    results_dir = Path(args.results_dir) if args.results_dir else (
        RESULTS_DIR if full or (report is not None and report.resolve() == FAULTS_PATH) else None)

    def names(given):  # --nemesis a,b and --nemesis a --nemesis b
        return [n.strip() for value in given for n in value.split(",") if n.strip()] if given else None

    return faults_main(quick=args.quick, nemeses=names(args.nemesis), workloads=names(args.workload),
                       seconds=args.time,
                       out_dir=Path(args.out_dir) if args.out_dir else None, report=report,
                       results_dir=results_dir, parallel=args.parallel, resume=args.resume)


def run_capture(args) -> int:
    """`kafka-wire compat capture`: the requests real clients send, into the replay corpus."""
    from compat.conformance.capture import CORPUS, main as capture_main

    return capture_main(Path(args.output) if args.output else CORPUS)


def run(args) -> int:
    if getattr(args, "compat_command", None) == "capture":
        return run_capture(args)
    if getattr(args, "compat_command", None) == "reference":
        return run_reference(args)
    if getattr(args, "compat_command", None) == "faults":
        return run_faults(args)
    if getattr(args, "compat_command", None) == "franz-go":
        return run_franz_go(args)
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
        whole_allowlist=args.whole_allowlist,
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
                        help="CI form: smaller client runs and the allowlisted librdkafka tests but a few long ones "
                             "whose broker side others cover (compat/librdkafka_suite.py QUICK_LEAVES_OUT)")
    parser.add_argument("--whole-allowlist", action="store_true",
                        help="with --quick: every allowlisted librdkafka test, the long ones too")
    parser.add_argument("--tests", metavar="LIST",
                        help="librdkafka tests to run, by number or name, comma-separated (default: all; "
                             "with --quick: the allowlist)")
    parser.add_argument("--no-clients", action="store_true", help="skip the client programs")
    parser.add_argument("--no-librdkafka", action="store_true", help="skip librdkafka's test suite")
    parser.add_argument("--kafka-version", help="TEST_KAFKA_VERSION for librdkafka's tests (default 3.9.0)")
    parser.add_argument("--workers", type=int, default=5,
                        help="librdkafka test processes at once, each with its own broker (default 5)")
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
    sub = parser.add_subparsers(dest="compat_command", metavar="{reference,franz-go,faults,capture}")
    capture = sub.add_parser(
        "capture", help="capture the requests real clients send, for the conformance suite's replay",
        description="Runs kafka-python, aiokafka, confluent-kafka, kcat, kafkajs, Java kafka-clients 4.3.0, "
                    "franz-go's and librdkafka's own tests and Kafka 4.3.0's tools against a kafka-wire broker behind "
                    "a recording proxy and writes one entry per distinct (client, API, version, request shape) to compat/conformance/captured/requests.json, which "
                    "the client_replay scenarios of `kafka-wire compat --against-kafka` play against both brokers.")
    capture.add_argument("--output", metavar="PATH", help="where to write the corpus (default %(default)s: "
                                                          "compat/conformance/captured/requests.json)")
    capture.set_defaults(func=run)
    reference = sub.add_parser(
        "reference", help="run the reference Apache Kafka (KRaft single node) until Ctrl-C",
        description="Resolves Apache Kafka VERSION from Maven Central (cached in .deps/ and ~/.m2), formats its "
                    "storage and runs it as a KRaft single node (broker and controller), printing its bootstrap.")
    reference.add_argument("--kafka-version", default=KAFKA_4, help="Apache Kafka version (default %(default)s)")
    reference.add_argument("--port", type=int, help="its PLAINTEXT port (default: a free one)")
    reference.add_argument("--data-dir", help="where its data and log go (default: a temporary directory)")
    reference.set_defaults(func=run)
    faults = sub.add_parser(
        "faults", help="Jepsen-style faults: nemesis x workload in network namespaces, histories checked",
        description="Runs each broker and each of three ZooKeeper nodes in its own network namespace (needs root), "
                    "injects each nemesis (partitions, kills, pauses, packet loss, ...) under real clients, checks "
                    "the recorded histories for anomalies and writes compat/FAULTS.md. Last line: "
                    "'faults: R runs, A anomalies'. Exit status 1 on an anomaly or a run that could not finish.")
    faults.add_argument("--quick", action="store_true", help="the CI form: a few nemesis x workload runs, 20 s each")
    faults.add_argument("--nemesis", action="append", metavar="NAME",
                        help="only this nemesis (repeatable); compat/FAULTS.md is then left alone unless --results "
                             "or --resume")
    faults.add_argument("--workload", action="append", metavar="NAME", help="only this workload (repeatable)")
    faults.add_argument("--time", type=float, metavar="SECONDS",
                        help="seconds of workload per run (default 20 with --quick, else 300)")
    faults.add_argument("--out-dir", metavar="DIR", help="keep the histories and the clusters' data here")
    faults.add_argument("--results", metavar="PATH",
                        help="where to write the table (default: compat/FAULTS.md for the full form and --resume; "
                             "none for --quick or --nemesis/--workload)")
    faults.add_argument("--results-dir", metavar="DIR",
                        help="where each run stores its result as JSON, and from which the table is rendered "
                             "(all results there) (default: compat/faults-results/ for the full form, --resume "
                             "and --results compat/FAULTS.md; else <out-dir>/results)")
    faults.add_argument("--parallel", type=int, default=1, metavar="N",
                        help="N runs at once, each its own cluster, namespaces and subnet (default 1)")
    faults.add_argument("--resume", action="store_true",
                        help="skip runs whose stored result covers --time seconds without a harness error "
                             "(finish the full form over several invocations)")
    faults.set_defaults(func=run)
    franz_go = sub.add_parser(
        "franz-go", help="run franz-go's own kgo integration tests against kafka-wire (or Apache Kafka)",
        description="Builds franz-go's pkg/kgo tests (the release in compat/franz-go/go.mod, from the Go module "
                    "proxy; compat/setup-franz-go.sh) and runs them unmodified, one process per test, against a "
                    "kafka-wire broker started here (PLAINTEXT, SCRAM over SASL_PLAINTEXT, then again over TLS), "
                    "or against Apache Kafka with --against-kafka. A full run writes its franz-go section of "
                    "compat/RESULTS.md (kafka-wire's, or Apache Kafka's). Exit status 1 when a test of "
                    "compat/franz-go-allowlist.txt fails.")
    franz_go.add_argument("--quick", action="store_true",
                          help="CI form: the ETL chains, large messages, a group, SCRAM, the share-group tests, a little TLS, "
                               "KGO_TEST_RECORDS=2000")
    franz_go.add_argument("--tests", metavar="LIST", help="top-level kgo tests to run, comma-separated (default: all)")
    franz_go.add_argument("--records", type=int, help="KGO_TEST_RECORDS (default: kgo's own, 500000; 2000 with --quick)")
    franz_go.add_argument("--against-kafka", metavar="VERSION",
                          help="run them against Apache Kafka VERSION (KRaft single node, started here) instead")
    franz_go.add_argument("--no-tls", action="store_true", help="skip the pass over TLS")
    franz_go.add_argument("--test-timeout", type=float, default=1800.0,
                          help="seconds one test process may take (default 1800)")
    franz_go.add_argument("--results", metavar="PATH",
                          help="write the results section here (default: compat/RESULTS.md for full runs)")
    franz_go.add_argument("--log-dir", metavar="DIR", help="keep the broker's data and every test's output here")
    franz_go.add_argument("--parallel", type=int, metavar="N",
                          help=f"brokers started, each running one test process at a time (default 1; "
                               f"{QUICK_PARALLEL} with --quick against kafka-wire)")
    franz_go.add_argument("--grow-allowlist", action="store_true",
                          help="append tests that ran and passed to compat/franz-go-allowlist.txt")
    franz_go.set_defaults(func=run)
