"""librdkafka's own integration test suite run against a broker: find the build, run, classify.

The suite is `tests/` of Debian's librdkafka source package, built by compat/setup-librdkafka.sh
into .deps/librdkafka/. It is run the way its own harness (tests/LibrdkafkaTestApp.py) runs it
against a trivup cluster: a `test.conf` naming the bootstrap servers with
`broker.address.family=v4` and `test.timeout.multiplier=2`, TEST_KAFKA_VERSION set to the Kafka
version the broker emulates, TEST_SCENARIO naming the cluster scenario, and the runner flags
`-L -K -E` (no local tests, no known-issue tests, no sockem tests). Quick mode (-Q) stays off.

Each test number runs in its own `test-runner` process (TESTS=NNNN): the runner kills its whole
process when one test times out, so one hung test must not take others down with it. Processes
run on lanes, a few at a time: a lane is a broker of the test's scenario, and in front of it,
when we started the broker, a counting proxy (compat/traffic.py) that the broker advertises, so
every request a test process sends is seen and counted at the broker's door.

Every test is put in one class:
  ran       needs a broker, passed, and sent the broker requests other than ApiVersions
  failed    needs a broker and failed (or its process timed out or crashed)
  no-op     needs a broker and "passed" without broker work: it skipped itself (TEST_SKIP), or
            sent nothing but ApiVersions
  excluded  needs a broker but is not run: the suite's own harness leaves it out (known issue,
            sockem, manual) or its scenario is not one we provide
  local     needs no broker (runs against librdkafka's mock cluster); not run here
A second pass runs a few tests (SASL_TESTS) over SASL_PLAINTEXT, as the suite's sasl_test.py
harness does: a lane whose broker has a SASL_PLAINTEXT listener and a SCRAM user; these results
are named `<test>@sasl`.

Requests are attributed to a test by client id (the suite sets client.id to the test's name); a
request from a client named otherwise counts for every test of its process. Without a proxy
(a broker given with --bootstrap) the count comes from librdkafka's own protocol debug log
(TEST_DEBUG=protocol: one `Sent <Api>Request` line per request), which misses the clients of
tests that route librdkafka's log elsewhere.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from . import allowlist

COMPAT_DIR = Path(__file__).resolve().parent
REPO_ROOT = COMPAT_DIR.parent
DEPS_DIR = REPO_ROOT / ".deps" / "librdkafka"
BUILD_STAMP = DEPS_DIR / "BUILT"
SETUP_SCRIPT = COMPAT_DIR / "setup-librdkafka.sh"
ALLOWLIST_PATH = COMPAT_DIR / "librdkafka-allowlist.txt"
# KAFKA_PATH for tests that shell out to Kafka's bin/kafka-topics.sh (ours calls `kafka-wire topics`).
KAFKA_PATH = COMPAT_DIR / "kafka-path"

# The suite's scenarios (tests/scenarios/*.json) as broker properties. Replication factor 3 is
# left out: one broker. "ak23" is for Kafka 2.3 only. The ACL tests (0081's CreateAcls, 0109,
# 0115, 0119 through kafka-acls.sh) need an authorizer; with allow.everyone.if.no.acl.found
# everything without an ACL stays allowed, as on the suite's own permissive clusters.
# A new group's first rebalance at once (group.initial.rebalance.delay.ms 0, as franz-go's target and
# the conformance brokers run; the suite's trivup clusters keep Kafka's 3000 ms): the tests create
# hundreds of groups, 0081_admin alone about 40, each first JoinGroup otherwise held 3 s. The delay
# itself is tested in tests/unit/test_group_coordinator.py.
_PERMISSIVE_AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                          "allow.everyone.if.no.acl.found": True}
_GROUPS = {"group.initial.rebalance.delay.ms": 0}
SCENARIO_BROKER_CONFIG: dict[str, dict[str, object]] = {
    "default": {"auto.create.topics.enable": True, "num.partitions": 4, **_PERMISSIVE_AUTHORIZER, **_GROUPS},
    "noautocreate": {"auto.create.topics.enable": False, "num.partitions": 4, **_PERMISSIVE_AUTHORIZER, **_GROUPS},
}

RAN, FAILED, NO_OP, EXCLUDED, LOCAL = "ran", "failed", "no-op", "excluded", "local"
OUTCOMES = (RAN, FAILED, NO_OP, EXCLUDED, LOCAL)
# What every connection sends before doing anything (librdkafka's log name, and Kafka's).
HANDSHAKE_APIS = frozenset({"ApiVersion", "ApiVersions"})

_SCENARIO = re.compile(r'\.scenario\s*=\s*"([^"]*)"')
_SENT = re.compile(r"^%7\|[\d.]+\|SEND\|([^|#]*)#[^|]*\|.*?Sent (\w+?)Request \(v(\d+)")
_SAY = re.compile(r"^\[([^\s\]]+)\s+/\s*[\d.]+s\] (.*)")
_SKIPPING = re.compile(r"\[(\w+)\s+/\s*[\d.]+s\].*?SKIPPING TEST: (.*)")
_FAILURE = re.compile(r'### Test "(\w+)(?: \((.*)\))?" failed at (\S+) at [^#\n]*###\s*\n(.*)')
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# test_create_topic(rk, name, partitions, 3) and Test::create_topic(c, name, partitions, 3)
_REPLICATION_FACTOR_3 = re.compile(r"create_topic\w*\([^;]*?,\s*3\s*\)\s*;", re.S)


class SuiteUnavailable(RuntimeError):
    """librdkafka's test suite is not built and could not be built here."""


@dataclass(frozen=True)
class ClientBug:
    """A suite test that fails against any broker, Apache Kafka included, because of a bug in the
    suite's own librdkafka (fixed in `fixed_in`)."""

    reason: str
    fixed_in: tuple[int, int, int]
    # The other tests of its number and scenario run in the same test-runner process; TESTS_SKIP
    # only skips whole numbers, so they run with this SUBTESTS filter (a substring none of the
    # buggy test's sub-tests match: its SUB_TEST returns at once, its body is skipped).
    others_subtests: str | None = None


# librdkafka < 2.1.0: a consumer whose assigned partitions' topic is deleted hangs in
# rd_kafka_destroy(). Removing a partition from the assignment stops its fetcher (which un-forwards
# the partition's fetch queue) and then resumes it (librdkafka #4117 puts a version barrier op,
# holding a partition reference, on that fetch queue); a partition still in its topic has the
# queue purged at termination, one of a deleted topic does not, so it is never freed and keeps its
# leader broker's reference, and that broker thread never exits. Fixed by librdkafka #4187
# ("Fix close blocked by refcnt in test 0113", v2.1.0). Seen here with a refcnt-debug build: the
# partition's refcount stops at 1 after the removal; the rebalances themselves all happen.
DELETED_TOPIC_HANG = ("librdkafka < 2.1.0 hangs in rd_kafka_destroy() after a subscribed topic is deleted "
                      "(leaked partition reference, librdkafka #4187, fixed in 2.1.0): fails against any broker")
CLIENT_BUGS: dict[str, ClientBug] = {
    "0045_subscribe_update_topic_remove": ClientBug(DELETED_TOPIC_HANG, (2, 1, 0),
                                                    others_subtests="do_test_non_exist_and_partchange"),
    "0113_cooperative_rebalance": ClientBug(DELETED_TOPIC_HANG, (2, 1, 0)),
}


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


@dataclass(frozen=True)
class SuiteTest:
    """One entry of the suite's test table (tests/test.c `tests[]`)."""

    name: str  # "0012_produce_consume"
    flags: frozenset[str]  # {"LOCAL", "KNOWN_ISSUE", "SOCKEM", "MANUAL"}
    scenarios: tuple[str, ...]  # ("default",), ("noautocreate",), ("default", "ak23")
    brokers_needed: int = 1  # 3 when its source creates topics with replication factor 3
    client_bug: str | None = None  # why it fails against any broker with this librdkafka (CLIENT_BUGS)
    subtests: str | None = None  # SUBTESTS for its process, to leave out a sibling's buggy sub-tests

    @property
    def number(self) -> str:
        return self.name.split("_", 1)[0]

    @property
    def needs_broker(self) -> bool:
        return "LOCAL" not in self.flags

    def exclusion(self) -> str | None:
        """Why the suite's own harness would not run this broker test, or None."""
        if "MANUAL" in self.flags:
            return "manual test"
        if "KNOWN_ISSUE" in self.flags:
            return "known issue in librdkafka (the harness runs with -K)"
        if "SOCKEM" in self.flags:
            return "needs sockem (the harness runs with -E)"
        if not any(s in SCENARIO_BROKER_CONFIG for s in self.scenarios):
            return f"scenario {','.join(self.scenarios)} not provided"
        if self.brokers_needed > 1:
            return (f"creates topics with replication factor {self.brokers_needed}: needs a "
                    f"{self.brokers_needed}-broker cluster (the suite's scenarios have 3 brokers, ours 1)")
        if self.client_bug:
            return self.client_bug
        return None

    @property
    def scenario(self) -> str:
        return next(s for s in self.scenarios if s in SCENARIO_BROKER_CONFIG)


@dataclass
class TestResult:
    test: SuiteTest
    outcome: str
    state: str = ""  # the runner's own verdict: PASSED, FAILED, SKIPPED, ... ("" when not run)
    duration: float = 0.0
    requests: collections.Counter = field(default_factory=collections.Counter)  # "Produce v7" -> n
    reason: str = ""  # why it failed, was skipped or excluded
    harness: str = ""  # "" for the suite's plain runs, "sasl" for runs over SASL_PLAINTEXT

    @property
    def key(self) -> str:
        """The test's name, with `@sasl` for a run over SASL: the allowlist's names."""
        return f"{self.test.name}@{self.harness}" if self.harness else self.test.name

    @property
    def broker_requests(self) -> int:
        return sum(n for api, n in self.requests.items() if api.split()[0] not in HANDSHAKE_APIS)

    def as_json(self) -> dict:
        return {"name": self.key, "outcome": self.outcome, "state": self.state,
                "duration": round(self.duration, 3), "reason": self.reason,
                "requests": dict(sorted(self.requests.items()))}


@dataclass(frozen=True)
class SuiteBuild:
    """A built librdkafka source tree whose tests/test-runner is ready to run."""

    source_dir: Path

    @property
    def tests_dir(self) -> Path:
        return self.source_dir / "tests"

    @property
    def runner(self) -> Path:
        return self.tests_dir / "test-runner"

    @property
    def version(self) -> str:
        return self.source_dir.name.removeprefix("librdkafka-")

    def tests(self) -> list[SuiteTest]:
        tests = parse_test_table((self.tests_dir / "test.c").read_text(errors="replace"))
        replicated = set()
        for source in [*self.tests_dir.glob("[0-9]*-*.c"), *self.tests_dir.glob("[0-9]*-*.cpp")]:
            if _REPLICATION_FACTOR_3.search(source.read_text(errors="replace")):
                replicated.add(source.name.split("-", 1)[0])
        tests = [dataclasses.replace(t, brokers_needed=3) if t.number in replicated else t for t in tests]
        return with_client_bugs(tests, self.version)


def with_client_bugs(tests: list[SuiteTest], version: str) -> list[SuiteTest]:
    """`tests` with the CLIENT_BUGS of librdkafka `version` marked on them and on their siblings."""
    bugs = {name: bug for name, bug in CLIENT_BUGS.items() if _version_tuple(version) < bug.fixed_in}
    marked = []
    for test in tests:
        if test.name in bugs:
            test = dataclasses.replace(test, client_bug=bugs[test.name].reason)
        else:
            for name, bug in bugs.items():
                sibling = next((t for t in tests if t.name == name), None)
                if (bug.others_subtests and sibling is not None and sibling.number == test.number
                        and sibling.scenarios == test.scenarios):
                    test = dataclasses.replace(test, subtests=bug.others_subtests)
        marked.append(test)
    return marked


def parse_test_table(test_c: str) -> list[SuiteTest]:
    """The `struct test tests[]` table of the suite's test.c, in its order."""
    start = test_c.index("struct test tests[] = {")
    table = test_c[start:test_c.index("{NULL}", start)]
    found = []
    for line_block in re.split(r"\n(?=\s*_TEST\()", table):
        match = re.search(r"_TEST\(\s*(\w+)\s*,\s*([^,)]*)", line_block)
        if not match:
            continue
        name, flag_text = match.groups()
        # TEST_F_KNOWN_ISSUE_WIN32 / _OSX are 0 on Linux: only whole flag names count.
        flags = frozenset(token.removeprefix("TEST_F_") for token in re.findall(r"\bTEST_F_\w+\b", flag_text)
                          if token in {"TEST_F_LOCAL", "TEST_F_KNOWN_ISSUE", "TEST_F_SOCKEM", "TEST_F_MANUAL"})
        scenario = _SCENARIO.search(line_block)
        scenarios = tuple(scenario.group(1).split(",")) if scenario else ("default",)
        found.append(SuiteTest(name, flags, scenarios))
    return found


def find_build() -> SuiteBuild | None:
    try:
        source_dir = Path(BUILD_STAMP.read_text().strip())
    except OSError:
        return None
    build = SuiteBuild(source_dir)
    return build if os.access(build.runner, os.X_OK) else None


def ensure_built(say: Callable[[str], None] = print) -> SuiteBuild:
    """The cached build, or a new one made by compat/setup-librdkafka.sh (about 90 s)."""
    build = find_build()
    if build is not None:
        return build
    say("building librdkafka's test suite (compat/setup-librdkafka.sh) ...")
    began = time.monotonic()
    done = subprocess.run(["bash", str(SETUP_SCRIPT)], cwd=REPO_ROOT, capture_output=True, text=True)
    build = find_build()
    if done.returncode != 0 or build is None:
        raise SuiteUnavailable(f"compat/setup-librdkafka.sh failed (exit {done.returncode}):\n"
                               f"{done.stdout[-3000:]}{done.stderr[-3000:]}")
    say(f"built librdkafka {build.version} test suite in {time.monotonic() - began:.0f}s")
    return build


def read_allowlist(path: Path = ALLOWLIST_PATH) -> list[str]:
    """Test names, one a line; `#` starts a comment."""
    return allowlist.read_allowlist(path)


def grow_allowlist(results: Iterable[TestResult], path: Path = ALLOWLIST_PATH) -> list[str]:
    """Adds every test that really ran and passed; never removes one. Returns the added names."""
    return allowlist.grow_allowlist(results, path, ALLOWLIST_HEADER)


ALLOWLIST_HEADER = """\
# librdkafka's own integration tests (Debian's librdkafka source package) that need a broker,
# really ran against kafka-wire and passed. This list only grows: CI (tests/integration/
# test_compat.py) fails when one of these fails or stops doing broker work.
# `kafka-wire compat --grow-allowlist` appends newly passing tests.
"""


# The quick form (`kafka-wire compat --quick`, CI's tests/integration/test_compat.py) runs the
# allowlist but these, each a long test (20-65 s a lane) of a client-side feature whose broker side
# other allowlisted tests of the quick form already exercise (named in the reason). They stay on
# the allowlist: `kafka-wire compat --quick --whole-allowlist` (KW_SLOW=1 in test_compat.py) and the
# full run (`kafka-wire compat`) run them and fail when one fails.
QUICK_LEAVES_OUT: dict[str, str] = {
    "0091_max_poll_interval_timeout": "a member processing longer than socket.timeout.ms stays in its group "
                                      "(client timers); a member leaving after max.poll.interval.ms: 0089",
    "0033_regex_subscribe": "regex subscriptions: a regex subscription following topic creation is 0045's",
    "0026_consume_pause": "pause/resume is client-side; fetch, commit and rebalance: 0030, 0118, 0132",
    "0122_buffer_cleaning_after_rebalance": "client-side buffer purge; rebalances with both assignors: "
                                            "0056, 0118, 0132",
    "0055_producer_latency": "client-side linger and wake-ups; produce with acks and batches: 0008, 0110, 0125",
    "0093_holb_consumer": "client-side head-of-line blocking; a JoinGroup held while another member is "
                          "slow: 0018, 0089",
    "0084_destroy_flags": "client-side destroy flags; leaving a group on close: 0018",
    "0020_destroy_hang": "client-side hangs on destroy; ListOffsets and unknown partitions: 0031, 0112",
    "0114_sticky_partitioning": "the producer's sticky partitioner; produce and partitions: 0011, 0048",
}


def quick_selection(allowlist: Iterable[str], whole: bool = False) -> list[str]:
    """The allowlisted plain (non-SASL) tests the quick form runs: all of them with `whole`."""
    return [key for key in allowlist if "@" not in key and (whole or key not in QUICK_LEAVES_OUT)]


# Seconds the tests that take 10 s or more took in a quick run against kafka-wire (2026-11-28, 2
# cores): run_tests starts them first. Most wait on timers (0081 creates about 40 groups, each
# first JoinGroup held group.initial.rebalance.delay.ms, 3 s, as on Kafka): started last, 0081
# would run on alone for minutes while the other lanes idle.
MEASURED_SECONDS: dict[str, float] = {
    "0081_admin": 227, "0091_max_poll_interval_timeout": 64, "0033_regex_subscribe": 64,
    "0026_consume_pause": 61, "0102_static_group_rebalance": 51, "0030_offset_commit": 51,
    "0122_buffer_cleaning_after_rebalance": 44, "0018_cgrp_term": 39, "0055_producer_latency": 38,
    "0041_fetch_max_bytes": 36, "0093_holb_consumer": 29, "0061_consumer_lag": 22,
    "0109_auto_create_topics": 21, "0084_destroy_flags": 20, "0069_consumer_add_parts": 19,
    "0089_max_poll_interval": 18, "0114_sticky_partitioning": 18, "0020_destroy_hang": 17,
    "0038_performance": 17, "0123_connections_max_idle": 16, "0050_subscribe_adds": 16,
    "0045_subscribe_update_non_exist_and_partchange": 15, "0045_subscribe_update": 15,
    "0137_barrier_batch_consume": 15, "0119_consumer_auth": 15, "0132_strategy_ordering": 14,
    "0118_commit_rebalance": 13, "0015_offsets_seek": 13, "0125_immediate_flush": 13, "0051_assign_adds": 12,
    "0059_bsearch": 10,
}


def classify_without_running(test: SuiteTest) -> TestResult | None:
    if not test.needs_broker:
        return TestResult(test, LOCAL, reason="needs no broker (librdkafka's mock cluster)")
    if (why := test.exclusion()) is not None:
        return TestResult(test, EXCLUDED, reason=why)
    return None


# The suite's SASL harness (tests/sasl_test.py) logs in as testuser/testpass.
SASL_USER, SASL_PASSWORD, SASL_MECHANISM = "testuser", "testpass", "SCRAM-SHA-256"
# What the SASL pass runs: the suite's SASL test and a few data-path, group and transaction tests.
SASL_TESTS = ("0001_multiobj", "0012_produce_consume", "0017_compression", "0019_list_groups",
              "0031_get_offsets", "0090_idempotence", "0129_fetch_aborted_msgs", "0135_sasl_credentials")


def test_conf(bootstrap: str, sasl: bool = False) -> str:
    """test.conf as the suite's harness writes it (LibrdkafkaTestApp.py), for one broker."""
    lines = [
        "broker.address.family=v4",
        "test.timeout.multiplier=2",
        "broker.version.fallback=0.10.0.0",
        "api.version.fallback.ms=0",
        f"bootstrap.servers={bootstrap}",
    ]
    if sasl:
        lines += ["security.protocol=SASL_PLAINTEXT", f"sasl.mechanisms={SASL_MECHANISM}",
                  f"sasl.username={SASL_USER}", f"sasl.password={SASL_PASSWORD}"]
    else:
        lines.append("security.protocol=PLAINTEXT")
    return "\n".join(lines) + "\n"


@dataclass
class Lane:
    """A broker for one scenario that runs one test process at a time; `proxy` (a
    compat.traffic.CountingProxy, or None) counts what reaches it."""

    scenario: str
    bootstrap: str
    proxy: object | None = None
    harness: str = ""  # "sasl": the broker's listener is SASL_PLAINTEXT and test.conf logs in


def run_tests(build: SuiteBuild, tests: Iterable[SuiteTest], lanes: Iterable[Lane], kafka_version: str,
              log_dir: Path, process_timeout: float = 300.0,
              on_result: Callable[[TestResult], None] | None = None,
              expected: Mapping[str, float] | None = None) -> list[TestResult]:
    """Runs the broker tests among `tests`, one process per test number and scenario, each on a
    free lane of its scenario; tests of a scenario without a lane are excluded. All lanes are of
    one harness (plain, or SASL), which the results carry. Returns a result for every test given,
    in the order given. The processes start longest first by `expected` (test name -> seconds;
    default MEASURED_SECONDS), then by number: a long test started last would run on alone."""
    log_dir.mkdir(parents=True, exist_ok=True)
    tests = list(tests)
    lanes = list(lanes)
    results: dict[str, TestResult] = {}
    lock = threading.Lock()

    harness = lanes[0].harness if lanes else ""

    def settle(result: TestResult) -> None:
        result.harness = harness
        with lock:
            results[result.test.name] = result
            if on_result:
                on_result(result)

    groups: dict[tuple[str, str], list[SuiteTest]] = collections.defaultdict(list)
    scenarios = {lane.scenario for lane in lanes}
    for test in tests:
        settled = classify_without_running(test)
        if settled is None and test.scenario not in scenarios:
            settled = TestResult(test, EXCLUDED, reason=f"no broker for scenario {test.scenario}")
        if settled is not None:
            settle(settled)
        else:
            groups[(test.scenario, test.number)].append(test)

    work: dict[str, queue.SimpleQueue] = collections.defaultdict(queue.SimpleQueue)
    expected = MEASURED_SECONDS if expected is None else expected
    for key in sorted(groups, key=lambda key: (-sum(expected.get(t.name, 0.0) for t in groups[key]), key)):
        work[key[0]].put(groups[key])

    def drive(lane: Lane) -> None:
        while True:
            try:
                group = work[lane.scenario].get_nowait()
            except queue.Empty:
                return
            for result in _run_process(build, group, lane, kafka_version, log_dir, process_timeout):
                settle(result)

    threads = [threading.Thread(target=drive, args=(lane,), daemon=True) for lane in lanes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [results[t.name] for t in tests]


def _run_process(build: SuiteBuild, group: list[SuiteTest], lane: Lane, kafka_version: str, log_dir: Path,
                 process_timeout: float) -> list[TestResult]:
    number, scenario = group[0].number, lane.scenario
    stem = f"{number}-{scenario}" + (f"-{lane.harness}" if lane.harness else "")
    log_path = log_dir / f"{stem}.log"
    report_path = log_dir / f"{stem}.report.json"
    conf_path = log_dir / f"{stem}.test.conf"
    conf_path.write_text(test_conf(lane.bootstrap, sasl=lane.harness == "sasl"))
    report_path.unlink(missing_ok=True)
    env = dict(os.environ,
               TESTS=number, TEST_SCENARIO=scenario, TEST_KAFKA_VERSION=kafka_version,
               RDKAFKA_TEST_CONF=str(conf_path), TEST_REPORT=str(report_path),
               KAFKA_PATH=str(KAFKA_PATH), BROKERS=lane.bootstrap, KAFKA_WIRE_PYTHON=sys.executable,
               LD_LIBRARY_PATH=os.pathsep.join(filter(None, [str(build.source_dir / "src"),
                                                             str(build.source_dir / "src-cpp"),
                                                             os.environ.get("LD_LIBRARY_PATH")])))
    if lane.proxy is None:
        env["TEST_DEBUG"] = "protocol"  # no proxy: count requests from librdkafka's own log
    if subtests := next((t.subtests for t in group if t.subtests), None):
        env["SUBTESTS"] = subtests
    env.pop("CI", None)  # the runner's CI mode changes timeouts and concurrency; we set both ourselves
    command = [str(build.runner), "-p1", "-L", "-K", "-E", "-s", scenario]
    if lane.proxy is not None:
        lane.proxy.take()  # whatever the previous process left in flight is not this one's
    began = time.monotonic()
    timed_out = False
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, cwd=build.tests_dir, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            returncode = process.wait(timeout=process_timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            process.kill()
            returncode = process.wait()
    elapsed = time.monotonic() - began
    counted = lane.proxy.take() if lane.proxy is not None else None
    output = _ANSI.sub("", log_path.read_text(errors="replace"))
    return _classify(group, output, report_path, returncode, timed_out, elapsed, process_timeout, counted)


def _attribute(names: set[str], client: str) -> Iterable[str]:
    """A client named after one of the process's tests is that test's; any other (a handle made
    without the suite's conf) counts for every test of the process."""
    return [client] if client in names else names


def _classify(group: list[SuiteTest], output: str, report_path: Path, returncode: int, timed_out: bool,
              elapsed: float, process_timeout: float,
              counted: Mapping[tuple[str, str, int], int] | None = None) -> list[TestResult]:
    """Results for the tests of one process, from its output, its report file and, when a proxy
    counted them, the requests (client id, api, version) -> n that reached the broker."""
    names = {t.name for t in group}
    requests: dict[str, collections.Counter] = {name: collections.Counter() for name in names}
    if counted is not None:
        for (client, api, version), n in counted.items():
            for name in _attribute(names, client):
                requests[name][f"{api} v{version}"] += n
    skipped: dict[str, str] = {}
    failures: dict[str, str] = {}
    last_said: dict[str, str] = {}  # test -> the line it printed last: often why it is about to fail
    said_before_failure: dict[str, str] = {}
    for line in output.splitlines():
        if said := _SAY.match(line):
            test_name, message = said.groups()
            if message.strip() == "TEST FAILURE":
                said_before_failure.setdefault(test_name, last_said.get(test_name, ""))
            else:
                last_said[test_name] = message.strip()
        if counted is None and (sent := _SENT.match(line)):
            client, api, version = sent.groups()
            for name in _attribute(names, client):
                requests[name][f"{api} v{version}"] += 1
        elif skip := _SKIPPING.search(line):
            skipped.setdefault(skip.group(1), skip.group(2).strip())
    for match in _FAILURE.finditer(output):
        name, subtest, where, message = match.groups()
        detail = f"{where}: {message.strip()}" + (f" (subtest {subtest})" if subtest else "")
        if context := said_before_failure.get(name):
            detail += f" [last said: {context}]"
        failures.setdefault(name, detail)
    try:
        report = json.loads(report_path.read_text()).get("tests", {})
    except (OSError, ValueError):
        report = {}
    main_failure = failures.get("<MAIN>")

    results = []
    for test in group:
        entry = report.get(test.name, {})
        state = entry.get("state", "")
        duration = float(entry.get("duration", 0.0) or 0.0)
        result = TestResult(test, FAILED, state=state, duration=duration, requests=requests[test.name])
        if timed_out:
            result.reason = f"test-runner did not finish in {process_timeout:.0f}s (killed)"
        elif state == "PASSED":
            if returncode != 0:
                result.reason = (f"passed, but test-runner then exited with status {returncode}"
                                 + (f": {main_failure}" if main_failure else ""))
            elif result.broker_requests == 0:
                result.outcome = NO_OP
                result.reason = "passed without sending the broker anything but ApiVersions" + (
                    "" if counted is not None else " (as far as librdkafka's own log shows: no proxy counted)")
            else:
                result.outcome = RAN
        elif state == "SKIPPED":
            result.outcome = NO_OP
            result.reason = skipped.get(test.name) or "skipped by the runner"
        else:
            result.reason = failures.get(test.name) or (
                f"no verdict (state {state or 'missing'}, test-runner exit status {returncode})")
        if not result.duration and result.outcome == FAILED:
            result.duration = elapsed
        results.append(result)
    return results


def summarize(results: Iterable[TestResult]) -> dict[str, int]:
    counts = {outcome: 0 for outcome in OUTCOMES}
    for result in results:
        counts[result.outcome] += 1
    return counts


def temporary_log_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="kafka-wire-librdkafka-"))
