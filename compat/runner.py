"""`kafka-wire compat`: real clients and librdkafka's own test suite against a broker, one matrix.

Starts brokers (testing.broker_process.BrokerProcess) unless one is given, runs every client program
(compat/clients.py) and librdkafka's integration tests (compat/librdkafka_suite.py), prints the
client x feature matrix and writes compat/RESULTS.md (plus a JSON twin for tools and CI).

Exit status 1 when a client program failed or a librdkafka test on the allowlist
(compat/librdkafka-allowlist.txt) did not run and pass; 0 otherwise.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import clients as client_checks
from . import franz_go_suite, peers
from . import librdkafka_suite as suite
from .matrix import FEATURES, build_matrix

COMPAT_DIR = Path(__file__).resolve().parent
RESULTS_PATH = COMPAT_DIR / "RESULTS.md"
DEFAULT_KAFKA_VERSION = "3.9.0"  # what Spark 4.0's connector is built on; librdkafka's tests gate on it


@dataclass
class Options:
    bootstrap: str | None = None  # an already running broker (the default scenario's)
    quick: bool = False  # CI form: smaller client runs, the allowlisted librdkafka tests but QUICK_LEAVES_OUT
    whole_allowlist: bool = False  # with quick: every allowlisted librdkafka test
    clients: bool = True
    librdkafka: bool = True
    tests: list[str] | None = None  # librdkafka test names or numbers to run (default: all, or the allowlist)
    kafka_version: str = DEFAULT_KAFKA_VERSION
    workers: int = 5  # lanes for the default scenario; the tests mostly wait (about 0.15 cores on average)
    process_timeout: float = 300.0
    results_path: Path = RESULTS_PATH
    log_dir: Path | None = None
    grow_allowlist: bool = False


@dataclass
class CompatReport:
    options: Options
    started: datetime.datetime
    elapsed: float = 0.0
    client_outcomes: list[client_checks.RunOutcome] = field(default_factory=list)
    suite_results: list[suite.TestResult] | None = None
    suite_version: str = ""
    suite_problem: str = ""  # why the librdkafka suite could not run
    suite_names: set[str] = field(default_factory=set)  # every test the built suite has
    allowlist: list[str] = field(default_factory=list)
    allowlist_added: list[str] = field(default_factory=list)
    retried_passes: list[str] = field(default_factory=list)  # allowlisted tests that passed only alone
    left_out: list[str] = field(default_factory=list)  # allowlisted tests the quick form did not run
    log_dir: Path | None = None

    @property
    def allowlist_failures(self) -> list[suite.TestResult]:
        if self.suite_results is None:
            return []
        wanted = set(self.allowlist)
        # Against a given broker there is no proxy, and the client's own log does not show every
        # test's requests: there only a failure counts, not a pass that looked like a no-op.
        allowed = {suite.RAN, suite.NO_OP} if self.options.bootstrap else {suite.RAN}
        return [r for r in self.suite_results if r.key in wanted and r.outcome not in allowed]

    @property
    def allowlist_run(self) -> list[suite.TestResult]:
        if self.suite_results is None:
            return []
        wanted = set(self.allowlist)
        return [r for r in self.suite_results if r.key in wanted]

    @property
    def allowlist_missing(self) -> list[str]:
        """Allowlisted names the suite does not have (a typo, or a different librdkafka)."""
        if self.suite_results is None:
            return []
        return [key for key in self.allowlist if key.split("@")[0] not in self.suite_names]

    @property
    def failed_clients(self) -> list[client_checks.RunOutcome]:
        return [o for o in self.client_outcomes if o.available and not o.passed]

    @property
    def ok(self) -> bool:
        suite_ok = not self.suite_problem or not self.options.librdkafka
        return (suite_ok and not self.allowlist_failures and not self.allowlist_missing
                and not self.failed_clients)


def run(options: Options, say=print) -> CompatReport:
    report = CompatReport(options, datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0))
    began = time.monotonic()
    report.log_dir = options.log_dir or suite.temporary_log_dir()
    report.allowlist = suite.read_allowlist()
    said = threading.Lock()
    unlocked_say = say

    def say(line: str) -> None:  # the client programs and librdkafka's tests report from their own threads
        with said:
            unlocked_say(line)

    with _lanes(options, report.log_dir) as lanes:
        say("broker(s): " + ", ".join(f"{lane.scenario}{'/' + lane.harness if lane.harness else ''}={lane.bootstrap}"
                                      for lane in lanes))
        if options.clients and options.librdkafka and not options.bootstrap:
            # The client programs have a broker of their own (the first) and run beside librdkafka's
            # tests, which mostly wait on timers.
            errors: list[BaseException] = []

            def run_clients() -> None:
                try:
                    _run_clients(options, lanes[0].bootstrap, report, say)
                except BaseException as error:  # raised again below, in this thread
                    errors.append(error)

            clients = threading.Thread(target=run_clients, name="compat-clients", daemon=True)
            clients.start()
            try:
                _run_librdkafka(options, lanes[1:], report, say)
            finally:
                clients.join()
            if errors:
                raise errors[0]
        else:
            if options.clients:
                _run_clients(options, lanes[0].bootstrap, report, say)
            if options.librdkafka:
                _run_librdkafka(options, lanes, report, say)
    report.elapsed = time.monotonic() - began
    if options.grow_allowlist and report.suite_results is not None:
        report.allowlist_added = suite.grow_allowlist(report.suite_results)
        report.allowlist = suite.read_allowlist()
    return report


@contextlib.contextmanager
def _lanes(options: Options, log_dir: Path) -> Iterator[list[suite.Lane]]:
    """The brokers to test: the given one, or brokers started here, each behind a counting proxy
    it advertises to clients: one for the client programs, `workers` for librdkafka's default
    scenario, one for its 'noautocreate' scenario and one for its SASL pass (when only one of the
    two runs, the first broker serves it)."""
    if options.bootstrap:
        yield [suite.Lane("default", options.bootstrap)]
        return
    from testing.broker_process import BrokerProcess, free_port
    from kafka_wire.sasl import SCRAM_MECHANISMS

    from .traffic import CountingProxy

    lanes_wanted = [("default", "")] * (max(1, options.workers if options.librdkafka else 1)
                                        + (1 if options.clients and options.librdkafka else 0))
    if options.librdkafka:
        lanes_wanted += [("noautocreate", ""), ("default", "sasl")]
    with contextlib.ExitStack() as stack:
        started = []
        for number, (scenario, harness) in enumerate(lanes_wanted):
            proxy = stack.enter_context(CountingProxy())
            protocol = "SASL_PLAINTEXT" if harness == "sasl" else "PLAINTEXT"
            port = free_port()
            config = {**suite.SCENARIO_BROKER_CONFIG[scenario], "listeners": f"{protocol}://127.0.0.1:{port}",
                      "advertised.listeners": f"{protocol}://{proxy.address}"}
            # 60 s to get ready (not 20): the lanes' brokers start up at the same time, below.
            broker = BrokerProcess(log_dir / f"broker-{number}-{scenario}{'-' + harness if harness else ''}",
                                   port=port, config=config, startup_timeout=60.0)
            if harness == "sasl":
                from broker.security.credentials import CredentialStore

                CredentialStore(broker.log_dir).set_password(suite.SASL_USER, suite.SASL_PASSWORD,
                                                             SCRAM_MECHANISMS[suite.SASL_MECHANISM])
            stack.callback(broker.stop)
            # Spawned from this thread: a broker is SIGKILLed when the thread that spawned it ends
            # (testing/processes.py, PR_SET_PDEATHSIG), so not from a pool's short-lived threads.
            # All are spawned first, then each is waited for: they start up at the same time.
            broker.spawn()
            started.append((broker, proxy, scenario, harness))
        lanes = []
        for broker, proxy, scenario, harness in started:
            broker.wait_ready()
            proxy.start(("127.0.0.1", broker.port))
            lanes.append(suite.Lane(scenario, proxy.address, proxy, harness))
        yield lanes


def _run_clients(options: Options, bootstrap: str, report: CompatReport, say) -> None:
    java = client_checks.JavaPrograms()
    try:
        for run in client_checks.client_runs(java):
            if options.quick and not run.quick:
                continue
            outcome = client_checks.run_client(run, bootstrap, options.quick)
            report.client_outcomes.append(outcome)
            verdict = "not run" if not outcome.available else ("pass" if outcome.passed else "FAIL")
            detail = f": {outcome.detail}" if outcome.detail else ""
            say(f"client {run.label}: {verdict} ({outcome.elapsed:.1f}s){detail}")
            if report.log_dir and outcome.output:
                safe = "".join(c if c.isalnum() or c in "-." else "_" for c in run.label)
                (report.log_dir / f"client-{safe}.log").write_text(outcome.output)
    finally:
        java.cleanup()


def _run_librdkafka(options: Options, lanes: list[suite.Lane], report: CompatReport, say) -> None:
    try:
        build = suite.ensure_built(say)
    except suite.SuiteUnavailable as problem:
        report.suite_problem = str(problem)
        say(f"librdkafka test suite: not available: {problem}")
        return
    report.suite_version = build.version
    all_tests = build.tests()
    report.suite_names = {t.name for t in all_tests}
    selected = options.tests
    sasl_selected = list(suite.SASL_TESTS)
    if selected is None and options.quick:
        selected = suite.quick_selection(report.allowlist, options.whole_allowlist)
        report.left_out = [key for key in report.allowlist if "@" not in key and key not in selected]
        sasl_selected = [key.split("@")[0] for key in report.allowlist if key.endswith("@sasl")]
    elif selected is not None:
        sasl_selected = [name for name in sasl_selected if name in selected or name.split("_")[0] in selected]
    tests = all_tests
    if selected is not None:
        wanted = set(selected)
        tests = [t for t in all_tests if t.name in wanted or t.number in wanted]
    sasl_tests = [t for t in all_tests if t.name in set(sasl_selected)]
    plain_lanes = [lane for lane in lanes if not lane.harness]
    sasl_lanes = [lane for lane in lanes if lane.harness == "sasl"]
    if not sasl_lanes:
        sasl_tests = []
    say(f"librdkafka {build.version} test suite: {len(tests)} tests, {len(sasl_tests)} more over SASL, "
        f"logs in {report.log_dir / 'librdkafka'}")

    said = threading.Lock()  # the plain and the SASL pass report from their own threads

    def show(result: suite.TestResult) -> None:
        if result.outcome in (suite.LOCAL, suite.EXCLUDED):
            return
        apis = result.broker_requests
        detail = f" - {result.reason}" if result.reason else ""
        with said:
            say(f"  {result.key:<48} {result.outcome:<7} {result.duration:6.1f}s  {apis:5d} requests{detail}")

    log_dir = report.log_dir / "librdkafka"
    # The SASL pass has its own broker: it runs beside the plain one, not after it.
    sasl_results: list[suite.TestResult] = []
    sasl_errors: list[BaseException] = []

    def run_sasl() -> None:
        try:
            sasl_results.extend(suite.run_tests(build, sasl_tests, sasl_lanes, options.kafka_version, log_dir,
                                                process_timeout=options.process_timeout, on_result=show))
        except BaseException as error:  # raised again below, in the caller's thread
            sasl_errors.append(error)

    sasl_thread = threading.Thread(target=run_sasl, name="librdkafka-sasl", daemon=True) if sasl_tests else None
    if sasl_thread is not None:
        sasl_thread.start()
    try:
        report.suite_results = suite.run_tests(build, tests, plain_lanes, options.kafka_version, log_dir,
                                               process_timeout=options.process_timeout, on_result=show)
    finally:
        if sasl_thread is not None:
            sasl_thread.join()
    if sasl_errors:
        raise sasl_errors[0]
    report.suite_results += sasl_results
    _retry_allowlisted_failures(options, build, report, plain_lanes, sasl_lanes, log_dir, say, show)


def _retry_allowlisted_failures(options: Options, build, report: CompatReport, plain_lanes, sasl_lanes,
                                log_dir: Path, say, show) -> None:
    """Some of librdkafka's tests are timed for a suite that runs one test at a time (e.g. 0102's
    max.poll.interval.ms window against session.timeout.ms); our lanes run several at once on a
    small machine. An allowlisted test that failed runs once more, alone; it counts as passed only
    if that run passes, and the report keeps the first failure's reason."""
    wanted = set(report.allowlist)
    failed = [r for r in report.suite_results if r.key in wanted and r.outcome == suite.FAILED]
    if not failed:
        return
    say(f"running {len(failed)} failed allowlisted test(s) again, one at a time: "
        + ", ".join(r.key for r in failed))
    for first in failed:
        lanes = sasl_lanes[:1] if first.harness == "sasl" else plain_lanes[:1]
        [again] = suite.run_tests(build, [first.test], lanes, options.kafka_version, log_dir / "retry",
                                  process_timeout=options.process_timeout, on_result=show)
        if again.outcome == suite.RAN:
            again.reason = f"passed when run again alone; first run failed: {first.reason}"
            report.retried_passes.append(again.key)
            index = report.suite_results.index(first)
            report.suite_results[index] = again


# --- reporting ---------------------------------------------------------------------------------

def matrix_of(report: CompatReport):
    rows = client_checks.merge_rows(report.client_outcomes)
    return build_matrix(rows, report.suite_results)


def summary_text(report: CompatReport) -> str:
    lines = ["", matrix_of(report).render_text(), ""]
    if report.suite_results is not None:
        counts = suite.summarize(r for r in report.suite_results if not r.harness)
        lines.append(f"librdkafka {report.suite_version} tests: {counts[suite.RAN]} ran and passed against the "
                     f"broker, {counts[suite.FAILED]} failed, {counts[suite.NO_OP]} passed as no-ops, "
                     f"{counts[suite.EXCLUDED]} excluded, {counts[suite.LOCAL]} local-only (not run)")
        sasl = suite.summarize(r for r in report.suite_results if r.harness == "sasl")
        if sum(sasl.values()):
            lines.append(f"over SASL_PLAINTEXT ({suite.SASL_MECHANISM}): {sasl[suite.RAN]} ran and passed, "
                         f"{sasl[suite.FAILED]} failed, {sasl[suite.NO_OP]} no-ops")
        run_here = report.allowlist_run
        lines.append(f"allowlist: {len(report.allowlist)} tests, {len(run_here)} run here, "
                     f"{len(run_here) - len(report.allowlist_failures)} passed"
                     + (f"; FAILED: {', '.join(r.key for r in report.allowlist_failures)}"
                        if report.allowlist_failures else ""))
        if report.retried_passes:
            lines.append(f"passed only when run again alone: {', '.join(report.retried_passes)}")
        if report.left_out:
            lines.append(f"allowlisted, left to --whole-allowlist by the quick form: {', '.join(report.left_out)}")
        if report.allowlist_missing:
            lines.append(f"allowlisted but not in this suite: {', '.join(report.allowlist_missing)}")
        if report.allowlist_added:
            lines.append(f"added to the allowlist: {', '.join(report.allowlist_added)}")
    elif report.suite_problem:
        lines.append(f"librdkafka test suite not run: {report.suite_problem.splitlines()[0]}")
    for outcome in report.failed_clients:
        lines.append(f"client {outcome.run.label} FAILED: {outcome.detail}")
    lines.append(f"compat {'passed' if report.ok else 'FAILED'} in {report.elapsed:.0f}s")
    return "\n".join(lines)


def _git_revision() -> str:
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=COMPAT_DIR, capture_output=True,
                              text=True, timeout=10)
        return done.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def results_markdown(report: CompatReport) -> str:
    o = report.options
    mode = ("quick (CI form: smaller client runs, allowlisted librdkafka tests only"
            + (", all of them)" if o.whole_allowlist else ", but the ones QUICK_LEAVES_OUT names)")) if o.quick else "full"
    out = [
        "# Compatibility results",
        "",
        f"Written by `kafka-wire compat{' --quick' if o.quick else ''}"
        f"{' --whole-allowlist' if o.quick and o.whole_allowlist else ''}` on {report.started.isoformat()} "
        f"(kafka-wire {_git_revision()}, Python {platform.python_version()}, mode: {mode}, "
        f"{report.elapsed:.0f}s). Broker: {o.bootstrap or 'started by the command'}; "
        f"librdkafka tests run with TEST_KAFKA_VERSION={o.kafka_version}.",
        "",
        "## Client x feature",
        "",
        "Each cell: `pass`, `FAIL`, or `-` (not run: the client's program does not exercise it yet).",
        "The librdkafka row counts its tests by the requests they sent (tests that ran / tests",
        "that reached the feature); a failed test counts against the most specific feature it reached.",
        "",
        matrix_of(report).render_markdown(),
        "",
    ]
    notes = [f"- {outcome.run.label}: {outcome.detail}" for outcome in report.client_outcomes
             if outcome.detail]
    if notes:
        out += ["Client notes:", "", *notes, ""]
    out += ["## librdkafka's own integration tests", ""]
    if report.suite_results is None:
        out += [f"Not run: {report.suite_problem or 'disabled'}", ""]
        return "\n".join(out)
    counts = suite.summarize(r for r in report.suite_results if not r.harness)
    sasl = suite.summarize(r for r in report.suite_results if r.harness == "sasl")
    out += [
        f"librdkafka {report.suite_version}, `tests/` of Debian's source package, built by "
        "`compat/setup-librdkafka.sh` and run as its own harness runs it (`test-runner -L -K -E`, "
        "quick mode off, `test.timeout.multiplier=2`, one process per test number).",
        "",
        "| class | tests | meaning |",
        "| --- | ---: | --- |",
        f"| ran | {counts[suite.RAN]} | needs a broker, passed, and sent it requests beyond ApiVersions |",
        f"| failed | {counts[suite.FAILED]} | needs a broker and failed |",
        f"| no-op | {counts[suite.NO_OP]} | needs a broker, but skipped itself or sent nothing beyond ApiVersions |",
        f"| excluded | {counts[suite.EXCLUDED]} | not run: known issue / sockem / manual, as in the suite's "
        "own harness, or a scenario without a broker |",
        f"| local | {counts[suite.LOCAL]} | needs no broker (librdkafka's mock cluster); not run here |",
        "",
        f"Over SASL_PLAINTEXT ({suite.SASL_MECHANISM}, as the suite's `sasl_test.py` harness runs it; "
        f"`@sasl` below): {sasl[suite.RAN]} ran and passed, {sasl[suite.FAILED]} failed, "
        f"{sasl[suite.NO_OP]} no-ops.",
        "",
        f"Allowlist (`compat/librdkafka-allowlist.txt`): {len(report.allowlist)} tests; "
        f"{len(report.allowlist_failures)} failed in this run"
        + (f" ({', '.join(r.key for r in report.allowlist_failures)})" if report.allowlist_failures else "")
        + "."
        + (f" The quick form left out {len(report.left_out)} (run by `--quick --whole-allowlist` and the full "
           f"run; compat/librdkafka_suite.py QUICK_LEAVES_OUT says which test covers each): "
           f"{', '.join(report.left_out)}." if report.left_out else ""),
        "",
        "| test | class | seconds | requests sent (beyond ApiVersions) | reason |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for result in report.suite_results:
        if result.outcome == suite.LOCAL:
            continue
        reason = result.reason.replace("|", "\\|").replace("\n", " ")[:200]
        allow = " (allowlisted)" if result.key in report.allowlist else ""
        out.append(f"| {result.key}{allow} | {result.outcome} | {result.duration:.1f} | "
                   f"{result.broker_requests} | {reason} |")
    local = [r.test.name for r in report.suite_results if r.outcome == suite.LOCAL and not r.harness]
    out += ["", f"Local-only tests ({len(local)}): {', '.join(local)}.", ""]
    return "\n".join(out)


def results_json(report: CompatReport) -> dict:
    matrix = matrix_of(report)
    return {
        "ok": report.ok,
        "quick": report.options.quick,
        "elapsed": round(report.elapsed, 1),
        "features": list(FEATURES),
        "matrix": {client: {"overall": overall, **{f: cell.verdict for f, cell in cells.items()}}
                   for client, cells, overall in matrix.rows},
        "clients": [{"run": o.run.label, "client": o.run.client, "available": o.available, "passed": o.passed,
                     "features": o.features, "detail": o.detail} for o in report.client_outcomes],
        "librdkafka": None if report.suite_results is None else {
            "version": report.suite_version,
            "counts": suite.summarize(r for r in report.suite_results if not r.harness),
            "sasl_counts": suite.summarize(r for r in report.suite_results if r.harness == "sasl"),
            "allowlist": report.allowlist,
            "allowlist_failures": [r.key for r in report.allowlist_failures],
            "allowlist_missing": report.allowlist_missing,
            "left_out": report.left_out,
            "tests": [r.as_json() for r in report.suite_results],
        },
        "librdkafka_problem": report.suite_problem,
    }


def write_results(report: CompatReport) -> None:
    path = report.options.results_path
    # The franz-go section is written by `kafka-wire compat franz-go`, the peers section (Kafka Streams,
    # Connect, MirrorMaker 2) from their tests' measured runs; both stay as they were.
    path.write_text(results_markdown(report) + franz_go_suite.kept_section(path) + peers.kept_section(path))
    path.with_suffix(".json").write_text(json.dumps(results_json(report), indent=1) + "\n")


def main(options: Options) -> int:
    report = run(options)
    print(summary_text(report))
    write_results(report)
    print(f"results written to {report.options.results_path} (logs in {report.log_dir})")
    sys.stdout.flush()
    return 0 if report.ok else 1
