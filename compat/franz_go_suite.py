"""franz-go's own kgo integration tests run, unmodified, against a broker: build, run, classify.

The tests are `pkg/kgo/*_test.go` of the franz-go release pinned in compat/franz-go/go.mod, from
the Go module proxy, compiled once into .deps/franz-go/kgo.test by compat/setup-franz-go.sh. They
are configured as their helpers_test.go reads the environment: KGO_SEEDS (the broker),
KGO_TEST_RF=1 (one broker), KGO_TEST_RECORDS (records each ETL level moves; kgo's default is
500000), KGO_TEST_SCRAM_SEEDS + KGO_TEST_SCRAM (TestSCRAMAuth, TestSCRAMAuthBadCredentials log in
over a SASL_PLAINTEXT listener) and KGO_TEST_TLS (every client of the suite dials TLS).

Each top-level test runs in its own process (`kgo.test -test.run '^Name$' -test.v`): one hung
or panicking test cannot take the others down, and the requests that reached the broker while it
ran are its own (TestGroupSimple's process also runs its companion, see COMPANIONS). The plain pass goes through a counting proxy (compat/traffic.py) that the broker
advertises, which tells a test that needs a broker from one that does not.

Every test is put in one class (subtests, `TestGroupETL/range/848`, are listed too):
  ran       passed, and sent the broker requests other than ApiVersions
  failed    failed, panicked or timed out
  skipped   skipped itself (the reason is kgo's: no share groups, no OAUTHBEARER seeds, ...)
  local     passed without sending the broker anything: a unit test, needs no broker
  excluded  not run in a pass where it fails against any broker (TLS_EXCLUDED says why)
Passes ("harnesses"): "" is the plain one (PLAINTEXT, SCRAM tests over SASL_PLAINTEXT with
SCRAM-SHA-256), "scram512" the SCRAM tests again with SCRAM-SHA-512, "tls" tests again with every
client over TLS (KGO_TEST_TLS); a result of a pass other than the plain one is named `Test@tls`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import datetime
import json
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import allowlist

COMPAT_DIR = Path(__file__).resolve().parent
REPO_ROOT = COMPAT_DIR.parent
MODULE_DIR = COMPAT_DIR / "franz-go"
DEPS_DIR = REPO_ROOT / ".deps" / "franz-go"
BINARY = DEPS_DIR / "kgo.test"
SETUP_SCRIPT = COMPAT_DIR / "setup-franz-go.sh"
ALLOWLIST_PATH = COMPAT_DIR / "franz-go-allowlist.txt"
RESULTS_PATH = COMPAT_DIR / "RESULTS.md"
JSON_RESULTS_PATH = COMPAT_DIR / "FRANZ-GO-RESULTS.json"  # beside the results file; -KAFKA for the reference

RAN, FAILED, SKIPPED, LOCAL, EXCLUDED = "ran", "failed", "skipped", "local", "excluded"
OUTCOMES = (RAN, FAILED, SKIPPED, LOCAL, EXCLUDED)
HANDSHAKE_APIS = frozenset({"ApiVersions"})

PLAIN, SCRAM_512, TLS = "", "scram512", "tls"
SCRAM_TESTS = ("TestSCRAMAuth", "TestSCRAMAuthBadCredentials")
SCRAM_USER, SCRAM_PASSWORD = "kgo-test", "kgo-test-secret"

# kgo's default KGO_TEST_RECORDS is 500000 per ETL level; the full run uses it unless told otherwise.
FULL_RECORDS = None
# The CI form: both ETL chains with every subtest (range, cooperative-sticky, static members,
# KIP-848), large messages, a group, transactions, SCRAM, the share-group tests, at a smaller
# record count.
QUICK_RECORDS = 2000
QUICK_TESTS = ("TestGroupETL", "TestTxnEtl", "TestClient_ProduceLargeMessages", "TestGroupSimple",
               "TestIssue434", "TestSCRAMAuth", "TestSCRAMAuthBadCredentials",
               # the five share-group (KIP-932) tests: 39 s together at 2000 records
               "TestShareGroup", "TestShareGroupETL", "TestShareGroupAckOnClose", "TestShareGroupOffsetsAdmin",
               "TestConsumeRegexShareSkipsInternal")
QUICK_TLS_TESTS = ("TestGroupSimple", "TestClient_ProduceLargeMessages")

# kgo's TestGroupSimple reads allow848 (set by the suite's first admin request, adm()) before its
# subtests call adm() themselves; under `go test` the package's other tests have made that request
# by then, alone it skips its 848 subtest. So it runs after a sequential test that makes the request
# (Go runs sequential top-level tests first, then releases the parallel ones), as in a package run.
COMPANIONS = {"TestGroupSimple": "TestClient_Produce"}

# Tests the TLS pass leaves out, with why: they fail over KGO_TEST_TLS against any broker.
TLS_EXCLUDED = {
    "TestIssue769": "sets its own Dialer, which kgo refuses beside KGO_TEST_TLS's DialTLSConfig (\"cannot set "
                    "both Dialer and DialTLSConfig\"); the test ignores NewClient's error and dereferences the "
                    "nil client: fails over TLS against any broker",
}

_RESULT = re.compile(r"^(\s*)--- (PASS|FAIL|SKIP): (\S+) \(([\d.]+)s\)")
_HEADER = re.compile(r"^=== (?:RUN|CONT|NAME|PAUSE)\s+(\S+)")
_LOG_LINE = re.compile(r"^\s+(\w+_test\.go:\d+: .*)")
SECTION_BEGIN = "<!-- franz-go: begin (written by `kafka-wire compat franz-go`) -->"
SECTION_END = "<!-- franz-go: end -->"
# The same run against Apache Kafka (--against-kafka) has a section of its own, after kafka-wire's.
REFERENCE_BEGIN = "<!-- franz-go against Apache Kafka: begin (written by `kafka-wire compat franz-go --against-kafka`) -->"
REFERENCE_END = "<!-- franz-go against Apache Kafka: end -->"


class SuiteUnavailable(RuntimeError):
    """The kgo test binary is not built and could not be built here."""


@dataclass
class TestResult:
    name: str  # "TestGroupETL" or "TestGroupETL/range/848"
    outcome: str
    duration: float = 0.0
    reason: str = ""
    harness: str = PLAIN
    requests: int = 0  # requests beyond ApiVersions that reached the broker (plain pass only)

    @property
    def key(self) -> str:
        return f"{self.name}@{self.harness}" if self.harness else self.name

    @property
    def top_level(self) -> bool:
        return "/" not in self.name

    def as_json(self) -> dict:
        return {"name": self.key, "outcome": self.outcome, "duration": round(self.duration, 2),
                "reason": self.reason, "requests": self.requests}


def franz_go_version() -> str:
    match = re.search(r"^require github\.com/twmb/franz-go (\S+)", (MODULE_DIR / "go.mod").read_text(), re.M)
    return match.group(1) if match else "?"


def package_dir() -> Path:
    """pkg/kgo's source in the module cache: the tests' working directory, as under `go test` (some read
    their package's files, e.g. TestOptValuesCoversEveryOption reads config.go)."""
    return REPO_ROOT / ".deps" / "go" / "pkg" / "mod" / "github.com" / "twmb" / f"franz-go@{franz_go_version()}" / "pkg" / "kgo"


def find_binary() -> Path | None:
    return BINARY if os.access(BINARY, os.X_OK) and (DEPS_DIR / "BUILT").is_file() else None


def ensure_built(say: Callable[[str], None] = print) -> Path:
    """The kgo test binary; compat/setup-franz-go.sh runs first (it does nothing when up to date)."""
    done = subprocess.run(["bash", str(SETUP_SCRIPT)], cwd=REPO_ROOT, capture_output=True, text=True)
    if done.stdout.strip():
        say(done.stdout.strip())
    binary = find_binary()
    if done.returncode != 0 or binary is None:
        raise SuiteUnavailable(f"compat/setup-franz-go.sh failed (exit {done.returncode}):\n"
                               f"{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return binary


def list_tests(binary: Path) -> list[str]:
    """The top-level Test* functions of the binary, in its order."""
    done = subprocess.run([str(binary), "-test.list", "^Test"], capture_output=True, text=True, check=True,
                          timeout=60)
    return [line.strip() for line in done.stdout.splitlines() if line.startswith("Test")]


def read_allowlist(path: Path = ALLOWLIST_PATH) -> list[str]:
    """Test names (with subtests and `@harness`), one a line; `#` starts a comment."""
    return allowlist.read_allowlist(path)


ALLOWLIST_HEADER = """\
# franz-go's own kgo integration tests (pkg/kgo of the release in compat/franz-go/go.mod) that
# need a broker, ran unmodified against kafka-wire and passed, subtests included; `@tls` and
# `@scram512` are the same test in another pass. This list only grows: CI
# (tests/integration/test_franz_go.py) runs the quick subset of it, `kafka-wire compat franz-go`
# all of it, and either fails when a listed test fails. `--grow-allowlist` appends new passes.
"""


def grow_allowlist(results: Iterable[TestResult], path: Path = ALLOWLIST_PATH) -> list[str]:
    """Adds every test that ran and passed; never removes one. Returns the added names."""
    return allowlist.grow_allowlist(results, path, ALLOWLIST_HEADER)


# -- the broker under test -------------------------------------------------------------------------------------


@dataclass
class Target:
    """Where the suite's clients connect: KGO_SEEDS for the plain pass, the SASL_PLAINTEXT listener
    for the SCRAM tests, the SSL listener and its CA for the TLS pass (None: that pass is not run)."""

    name: str  # "kafka-wire" or "Apache Kafka 4.3.0"
    seeds: str
    scram_seeds: str | None = None
    tls_seeds: str | None = None
    ca_path: Path | None = None
    proxy: object | None = None  # a compat.traffic.CountingProxy in front of `seeds`, when we started it


def make_certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a server certificate for 127.0.0.1 / localhost, made with the openssl
    command line: (ca.pem, server key+chain PEM, server key PEM)."""
    if not shutil.which("openssl"):
        raise SuiteUnavailable("the openssl command line is needed to make the TLS pass's certificates")
    folder.mkdir(parents=True, exist_ok=True)

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True, timeout=60)

    key = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    openssl("req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.pem", "-days", "7", "-subj", "/CN=kgo-test-ca")
    openssl("req", *key, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    (folder / "server.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.crt", "-days", "7", "-extfile", "server.ext")
    chain = folder / "server.pem"
    chain.write_text((folder / "server.key").read_text() + (folder / "server.crt").read_text())
    return folder / "ca.pem", chain, folder / "server.key"


@contextlib.contextmanager
def kafka_wire_target(log_dir: Path, tls: bool = True) -> Iterator[Target]:
    """A kafka-wire broker started here: PLAINTEXT behind a counting proxy (advertised), SASL_PLAINTEXT
    with a SCRAM user, and SSL when `tls`."""
    from broker.security.credentials import CredentialStore
    from testing.broker_process import BrokerProcess, free_port
    from kafka_wire.sasl import SCRAM_MECHANISMS

    from .traffic import CountingProxy

    with contextlib.ExitStack() as stack:
        proxy = stack.enter_context(CountingProxy())
        ports = {"PLAINTEXT": free_port(), "SASL_PLAINTEXT": free_port()}
        if tls:
            ports["SSL"] = free_port()
        advertised = {**{name: f"127.0.0.1:{port}" for name, port in ports.items()}, "PLAINTEXT": proxy.address}
        config = {
            "listeners": ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items()),
            "advertised.listeners": ",".join(f"{name}://{address}" for name, address in advertised.items()),
            "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
            # As the reference Kafka runs (compat/reference_kafka.py): a group's first rebalance at once.
            "group.initial.rebalance.delay.ms": 0,
        }
        ca_path = None
        if tls:
            ca_path, chain, _key = make_certificates(log_dir / "certificates")
            config.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(chain),
                           "ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca_path),
                           "ssl.client.auth": "none"})
        broker = BrokerProcess(log_dir / "kafka-wire", port=ports["PLAINTEXT"], config=config, startup_timeout=60)
        store = CredentialStore(broker.log_dir)
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            store.set_password(SCRAM_USER, SCRAM_PASSWORD, SCRAM_MECHANISMS[mechanism])
        stack.callback(broker.stop)
        broker.start()
        proxy.start(("127.0.0.1", broker.port))
        yield Target("kafka-wire", proxy.address, scram_seeds=f"127.0.0.1:{ports['SASL_PLAINTEXT']}",
                     tls_seeds=f"127.0.0.1:{ports['SSL']}" if tls else None, ca_path=ca_path, proxy=proxy)


@contextlib.contextmanager
def reference_kafka_target(version: str, log_dir: Path, tls: bool = True) -> Iterator[Target]:
    """The reference Apache Kafka (compat/reference_kafka.py), KRaft single node, with a PLAINTEXT listener
    behind a counting proxy, a SASL_PLAINTEXT one with the same SCRAM user (added at format time) and,
    when `tls`, an SSL one with the same kind of PEM certificate as kafka-wire's."""
    from testing.broker_process import free_port

    from .reference_kafka import running_reference_kafka
    from .traffic import CountingProxy

    with contextlib.ExitStack() as stack:
        proxy = stack.enter_context(CountingProxy())
        plain, sasl, ssl_port, controller = free_port(), free_port(), free_port(), free_port()
        tls_listener = f",SSL://127.0.0.1:{ssl_port}" if tls else ""
        config = {
            "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}{tls_listener},"
                         f"CONTROLLER://127.0.0.1:{controller}",
            "advertised.listeners": f"PLAINTEXT://{proxy.address},SASL_PLAINTEXT://127.0.0.1:{sasl}{tls_listener}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,"
                                              "CONTROLLER:PLAINTEXT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        }
        ca_path = None
        if tls:
            ca_path, chain, _key = make_certificates(log_dir / "certificates")
            config.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(chain),
                           "ssl.client.auth": "none"})
        users = tuple(arg for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")
                      for arg in ("--add-scram", f"{mechanism}=[name={SCRAM_USER},password={SCRAM_PASSWORD}]"))
        kafka = stack.enter_context(running_reference_kafka(version, data_dir=log_dir / f"kafka-{version}",
                                                            port=plain, config=config, format_args=users,
                                                            controller_port=controller))
        proxy.start(("127.0.0.1", kafka.port))
        yield Target(f"Apache Kafka {version}", proxy.address, scram_seeds=f"127.0.0.1:{sasl}",
                     tls_seeds=f"127.0.0.1:{ssl_port}" if tls else None, ca_path=ca_path, proxy=proxy)


# -- running -------------------------------------------------------------------------------------------------


def environment(target: Target, harness: str, records: int | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("KGO_")}
    env.update({"KGO_TEST_RF": "1", "KGO_SEEDS": target.seeds, "KGO_LOG_LEVEL": "info"})
    if records:
        env["KGO_TEST_RECORDS"] = str(records)
    if target.scram_seeds:
        env["KGO_TEST_SCRAM_SEEDS"] = target.scram_seeds
        env["KGO_TEST_SCRAM"] = f"{SCRAM_USER}:{SCRAM_PASSWORD}:{512 if harness == SCRAM_512 else 256}"
    if harness == TLS:
        env["KGO_SEEDS"] = target.tls_seeds or ""
        env["KGO_TEST_TLS"] = f"ca:{target.ca_path}"
    return env


def run_test(binary: Path, name: str, target: Target, harness: str, records: int | None, timeout: float,
             log_path: Path) -> list[TestResult]:
    """One top-level test (and its subtests) in its own process."""
    pattern = "|".join(re.escape(n) for n in (COMPANIONS.get(name), name) if n)
    command = [str(binary), "-test.v", "-test.run", f"^({pattern})$", "-test.count", "1",
               "-test.timeout", f"{int(timeout)}s"]
    # The SCRAM tests dial the SASL_PLAINTEXT listener, not the counted one: their passes are runs.
    counting = harness == PLAIN and target.proxy is not None and name not in SCRAM_TESTS
    if counting:
        target.proxy.take()  # what the previous process left in flight is not this one's
    began = time.monotonic()
    timed_out = False
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, cwd=package_dir(), env=environment(target, harness, records),
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            returncode = process.wait(timeout=timeout + 60)  # the binary's own -test.timeout comes first
        except subprocess.TimeoutExpired:
            timed_out = True
            process.kill()
            returncode = process.wait()
        except BaseException:  # Ctrl-C: the test process (its own session) must not outlive us
            process.kill()
            process.wait()
            raise
    elapsed = time.monotonic() - began
    requests = None
    if counting:
        requests = sum(n for (_client, api, _version), n in target.proxy.take().items() if api not in HANDSHAKE_APIS)
    output = log_path.read_text(errors="replace")
    return classify(name, output, returncode, timed_out, elapsed, harness, requests)


def classify(name: str, output: str, returncode: int, timed_out: bool, elapsed: float, harness: str,
             requests: int | None) -> list[TestResult]:
    """Results for test `name` and its subtests from the process's -test.v output. `requests`: what
    reached the broker beyond ApiVersions (None when not counted: then a pass is taken as `ran`)."""
    results: dict[str, TestResult] = {}
    said: dict[str, list[str]] = {}  # what each test logged (t.Skip / t.Error messages), streamed by -test.v
    current = None
    verdicts = []
    for line in output.splitlines():
        if header := _HEADER.match(line):
            current = header.group(1)
        elif match := _RESULT.match(line):
            current = match.group(3)  # log lines printed under a verdict are that test's
            verdicts.append(match.groups()[1:])
        elif (logged := _LOG_LINE.match(line)) and current is not None:
            said.setdefault(current, []).append(logged.group(1).strip())
    for verdict, test, seconds in verdicts:
        if test != name and not test.startswith(name + "/"):
            continue
        messages = said.get(test, [])
        result = TestResult(test, FAILED, float(seconds), harness=harness, requests=requests or 0)
        if verdict == "PASS":
            result.outcome = LOCAL if requests == 0 else RAN
            if result.outcome == LOCAL:
                result.reason = "passed without sending the broker anything beyond ApiVersions (needs no broker)"
        elif verdict == "SKIP":
            result.outcome = SKIPPED
            result.reason = messages[-1] if messages else "skipped"
        else:
            failures = [m for m in messages if "deleting " not in m and "NOT DELETING" not in m
                        and "completed in" not in m]
            result.reason = "; ".join(failures[:3])[:500] or "failed"
        results[test] = result
    if name not in results:  # no verdict: it panicked, timed out or the binary failed
        why = f"killed after {elapsed:.0f}s" if timed_out else f"no verdict (exit status {returncode})"
        if panic := re.search(r"^(panic: .*)$", output, re.M):
            why = panic.group(1)
        results[name] = TestResult(name, FAILED, elapsed, why[:500], harness, requests or 0)
    elif returncode != 0 and results[name].outcome != FAILED:
        results[name].outcome = FAILED
        results[name].reason = f"passed, but the test binary then exited with status {returncode}"
    return [results[name], *sorted((r for t, r in results.items() if t != name), key=lambda r: r.name)]


@dataclass
class SuiteReport:
    target: str
    version: str
    records: int | None
    started: datetime.datetime
    elapsed: float = 0.0
    results: list[TestResult] = field(default_factory=list)
    allowlist: list[str] = field(default_factory=list)
    allowlist_added: list[str] = field(default_factory=list)
    selected: bool = False  # only some tests ran (--quick / --tests): the allowlist is checked for those
    # Against Apache Kafka a kgo test may skip itself where kafka-wire answers otherwise (Kafka 4.3 still
    # advertises Produce v0-2, so TestIssueProduceBrokerTooOldFailsRecords has nothing to test there):
    # only a failure counts.
    reference: bool = False

    @property
    def allowlist_failures(self) -> list[TestResult]:
        wanted = set(self.allowlist)
        bad = {FAILED} if self.reference else {FAILED, SKIPPED, LOCAL, EXCLUDED}
        return [r for r in self.results if r.key in wanted and r.outcome in bad]

    @property
    def allowlist_missing(self) -> list[str]:
        """Allowlisted names this run should have had but did not produce (a full run only)."""
        if self.selected:
            return []
        seen = {r.key for r in self.results}
        passes = {r.harness for r in self.results}  # a pass not run here (no TLS listener) is not missing
        skipped = {r.name for r in self.results if r.outcome == SKIPPED and r.harness == PLAIN}
        return [key for key in self.allowlist if key not in seen and key.partition("@")[2] in passes
                and not (self.reference and key.partition("@")[0].split("/")[0] in skipped)]

    @property
    def ok(self) -> bool:
        return not self.allowlist_failures and not self.allowlist_missing

    def counts(self, harness: str = PLAIN, top_level: bool = True) -> dict[str, int]:
        counts = {outcome: 0 for outcome in OUTCOMES}
        for r in self.results:
            if r.harness == harness and r.top_level == top_level:
                counts[r.outcome] += 1
        return counts


def run_suite(binary: Path, target: Target | list[Target], tests: list[str], tls_tests: list[str],
              records: int | None, timeout: float, log_dir: Path, say: Callable[[str], None] = print,
              scram512: bool = True) -> list[TestResult]:
    """The plain pass over `tests`, then the SCRAM tests with SCRAM-SHA-512, then `tls_tests` over TLS.
    Given several targets (brokers), one test process runs on each at once: a broker's counting
    proxy then sees one process's requests only. The results keep the order of the tests."""
    targets = target if isinstance(target, list) else [target]
    target = targets[0]
    free: queue.SimpleQueue = queue.SimpleQueue()
    for each in targets:
        free.put(each)
    passes = [(PLAIN, tests)]
    if scram512 and target.scram_seeds:
        passes.append((SCRAM_512, [t for t in tests if t in SCRAM_TESTS]))
    if target.tls_seeds:
        passes.append((TLS, tls_tests))
    results = []
    (log_dir / "tests").mkdir(parents=True, exist_ok=True)
    said = threading.Lock()

    def one(harness: str, name: str) -> list[TestResult]:
        log_path = log_dir / "tests" / f"{name}{'@' + harness if harness else ''}.log"
        mine = free.get()
        try:
            found = run_test(binary, name, mine, harness, records, timeout, log_path)
        finally:
            free.put(mine)
        top = found[0]
        subtests = found[1:]
        detail = f": {top.reason}" if top.reason and top.outcome != LOCAL else ""
        extra = ""
        if subtests:
            extra = " [" + ", ".join(f"{r.name.split('/', 1)[1]} {r.outcome}" for r in subtests) + "]"
        with said:
            say(f"{top.key}: {top.outcome} ({top.duration:.1f}s){extra}{detail}")
        return found

    with concurrent.futures.ThreadPoolExecutor(len(targets), thread_name_prefix="kgo") as pool:
        for harness, names in passes:
            for found in pool.map(lambda name: one(harness, name), names):
                results += found
    return results


def tls_candidates(results: Iterable[TestResult]) -> list[str]:
    """The top-level tests that ran against the broker in the plain pass (not the SCRAM ones, which
    dial their own SASL_PLAINTEXT listener): what the TLS pass runs again."""
    return [r.name for r in results if r.harness == PLAIN and r.top_level and r.outcome == RAN
            and r.name not in SCRAM_TESTS and r.name not in TLS_EXCLUDED]


def run(*, binary: Path, target_factory, tests: list[str] | None, quick: bool, records: int | None,
        timeout: float, log_dir: Path, tls: bool, grow: bool, say: Callable[[str], None] = print,
        parallel: int = 1) -> SuiteReport:
    all_tests = list_tests(binary)
    selected = tests is not None or quick
    if tests is None:
        tests = list(QUICK_TESTS) if quick else all_tests
    unknown = [t for t in tests if t not in all_tests]
    if unknown:
        raise SystemExit(f"kafka-wire compat franz-go: kgo has no tests named {', '.join(unknown)}")
    report = SuiteReport("", franz_go_version(), records,
                         datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0), selected=selected)
    report.allowlist = read_allowlist()
    began = time.monotonic()
    with contextlib.ExitStack() as stack:
        # `parallel` brokers (targets), each running one test process at a time.
        targets = [stack.enter_context(target_factory(log_dir if n == 0 else log_dir / f"target-{n}"))
                   for n in range(max(1, parallel))]
        target = targets[0]
        report.target = target.name
        report.reference = target.name != "kafka-wire"
        say(f"franz-go {report.version} kgo tests against {target.name} (KGO_SEEDS="
            f"{','.join(t.seeds for t in targets)}, KGO_TEST_RECORDS={records or 'kgo default'}; "
            f"logs in {log_dir / 'tests'})")
        plain_only = [dataclasses.replace(t, tls_seeds=None) for t in targets]
        report.results = run_suite(binary, plain_only, tests, [], records, timeout, log_dir, say)
        if tls and target.tls_seeds:
            tls_tests = list(QUICK_TLS_TESTS) if quick else tls_candidates(report.results)
            report.results += [TestResult(name, EXCLUDED, reason=why, harness=TLS)
                               for name, why in TLS_EXCLUDED.items() if name in tests and not quick]
            report.results += run_suite(binary, targets, [], tls_tests, records, timeout, log_dir, say,
                                        scram512=False)
    report.elapsed = time.monotonic() - began
    if grow:
        report.allowlist_added = grow_allowlist(report.results)
        report.allowlist = read_allowlist()
    return report


# -- results ---------------------------------------------------------------------------------------------------


def summary_text(report: SuiteReport) -> str:
    plain = report.counts()
    lines = [f"franz-go {report.version} kgo tests against {report.target}: " + ", ".join(
        f"{n} {outcome}" for outcome, n in plain.items()) + f" (top-level tests, {report.elapsed:.0f}s)"]
    for harness in (SCRAM_512, TLS):
        counts = report.counts(harness)
        if any(counts.values()):
            lines.append(f"  @{harness}: " + ", ".join(f"{n} {o}" for o, n in counts.items() if n))
    lines.append(f"allowlist ({ALLOWLIST_PATH.name}): {len(report.allowlist)} entries, "
                 f"{len(report.allowlist_failures)} failed, {len(report.allowlist_missing)} not run"
                 + (f"; added {len(report.allowlist_added)}" if report.allowlist_added else ""))
    for r in report.allowlist_failures:
        lines.append(f"  ALLOWLISTED {r.key}: {r.outcome}: {r.reason}")
    for key in report.allowlist_missing:
        lines.append(f"  ALLOWLISTED {key}: not run")
    return "\n".join(lines)


def results_markdown(report: SuiteReport, command: str) -> str:
    """The franz-go section of compat/RESULTS.md."""
    plain = report.counts()
    records = report.records or "500000 (kgo's default)"
    begin, end = (REFERENCE_BEGIN, REFERENCE_END) if report.reference else (SECTION_BEGIN, SECTION_END)
    title = f"franz-go's kgo integration tests against {report.target}" if report.reference else \
        "franz-go's kgo integration tests"
    out = [begin, f"## {title}", "",
           f"franz-go {report.version}, `pkg/kgo` tests from the Go module proxy, unmodified, compiled by "
           f"`compat/setup-franz-go.sh` and run one process per top-level test with `KGO_TEST_RF=1`, "
           f"`KGO_TEST_RECORDS={records}`, SCRAM tests over SASL_PLAINTEXT, then again over TLS "
           f"(`KGO_TEST_TLS`). Written by `{command}` on {report.started.isoformat()} against "
           f"{report.target} ({report.elapsed:.0f}s).", "",
           "| class | top-level tests | meaning |", "| --- | ---: | --- |",
           f"| ran | {plain[RAN]} | passed, and sent the broker requests beyond ApiVersions |",
           f"| failed | {plain[FAILED]} | failed, panicked or timed out |",
           f"| skipped | {plain[SKIPPED]} | skipped itself (kgo's reason below) |",
           f"| local | {plain[LOCAL]} | passed without the broker: a unit test |",
           f"| excluded | {plain[EXCLUDED]} | not run: fails in that pass against any broker (reason below) |", ""]
    for harness, label in ((SCRAM_512, "SCRAM-SHA-512"), (TLS, "TLS (every client dials the SSL listener)")):
        counts = report.counts(harness)
        if any(counts.values()):
            out.append(f"Again with {label} (`@{harness}` below): " + ", ".join(
                f"{n} {o}" for o, n in counts.items() if n) + ".")
    allowlisted = set(report.allowlist)
    out += ["", f"Allowlist (`compat/{ALLOWLIST_PATH.name}`): {len(report.allowlist)} entries; "
                f"{len(report.allowlist_failures)} failed in this run.", "",
            "| test | class | seconds | requests | reason |", "| --- | --- | ---: | ---: | --- |"]
    for r in report.results:
        if r.outcome == LOCAL:
            continue
        name = f"{r.key} (allowlisted)" if r.key in allowlisted else r.key
        reason = r.reason.replace("|", "\\|")
        counted = not r.harness and r.name.split("/")[0] not in SCRAM_TESTS  # others dial uncounted listeners
        out.append(f"| {name} | {r.outcome} | {r.duration:.1f} | {r.requests if counted else '-'} | {reason} |")
    local = [r.name for r in report.results if r.outcome == LOCAL and r.top_level]
    out += ["", f"Tests that need no broker ({len(local)}): {', '.join(local)}.", "", end, ""]
    return "\n".join(out)


def write_results(report: SuiteReport, command: str, path: Path = RESULTS_PATH) -> None:
    """Puts the franz-go section into compat/RESULTS.md (replacing the one there) and the JSON twin."""
    section = results_markdown(report, command)
    text = path.read_text() if path.exists() else ""
    path.write_text(replace_section(text, section))
    json_name = JSON_RESULTS_PATH.name.replace(".json", "-KAFKA.json") if report.reference else JSON_RESULTS_PATH.name
    (path.parent / json_name).write_text(json.dumps({
        "franz_go": report.version, "target": report.target, "records": report.records,
        "started": report.started.isoformat(), "elapsed": round(report.elapsed, 1), "ok": report.ok,
        "allowlist": report.allowlist, "allowlist_failures": [r.key for r in report.allowlist_failures],
        "allowlist_missing": report.allowlist_missing,
        "tests": [r.as_json() for r in report.results]}, indent=1) + "\n")


def replace_section(text: str, section: str) -> str:
    """`text` with the franz-go section `section` (kafka-wire's or the reference's, by its first line)
    put in place of the one there, or appended (the reference's after kafka-wire's)."""
    begin, end = (REFERENCE_BEGIN, REFERENCE_END) if section.startswith(REFERENCE_BEGIN) else (SECTION_BEGIN,
                                                                                               SECTION_END)
    start, stop = text.find(begin), text.find(end)
    if start >= 0 and stop > start:
        return text[:start] + section.rstrip("\n") + text[stop + len(end):]
    if begin == SECTION_BEGIN and (before := text.find(REFERENCE_BEGIN)) >= 0:
        return text[:before] + section + "\n" + text[before:]
    return text.rstrip("\n") + ("\n\n" if text.strip() else "") + section


def kept_section(path: Path = RESULTS_PATH) -> str:
    """The franz-go sections of the results file at `path`, for `kafka-wire compat` to keep when it
    rewrites the rest ("" when there are none)."""
    try:
        text = path.read_text()
    except OSError:
        return ""
    kept = []
    for begin, end in ((SECTION_BEGIN, SECTION_END), (REFERENCE_BEGIN, REFERENCE_END)):
        start, stop = text.find(begin), text.find(end)
        if start >= 0 and stop > start:
            kept.append(text[start:stop + len(end)])
    return "".join(f"\n{section}\n" for section in kept)


def temporary_log_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="kafka-wire-franz-go-"))
