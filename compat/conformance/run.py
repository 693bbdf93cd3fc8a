"""`kafka-wire compat --against-kafka VERSION`: every case against Kafka and kafka-wire, compared, reported.

For each profile a case needs, one reference Kafka and one kafka-wire broker are started (fresh data
directories), once per run: the next profiles' pairs start in the background while a profile's cases
play, and each pair stops once its profile is done. Each case is played on Kafka, then on kafka-wire; both transcripts are
normalised (normalize.py) and compared (compare.py); each difference is looked up in known.py.
The report goes to compat/CONFORMANCE.md with the raw results in compat/CONFORMANCE.json (one
section per Kafka version run, so the 4.x and 3.9 runs sit side by side). The last line printed is

    conformance against Apache Kafka 4.3.0: C cases, I identical, K kept, O open, U unexplained

and the exit status is 1 when U > 0 or a case could not be run on one side but could on the other.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import fnmatch
import importlib
import json
import os
import pkgutil
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from testing.processes import ProcessFailure

from . import scenarios as scenarios_package
from .compare import Difference, compare_transcripts
from .known import explain
from .normalize import normalise_transcript
from .profiles import PROFILES, Ports, Profile
from .scenario import ALL, REGISTRY, Case, CaseFailed, Session, Target

SLOW_CASE_SECONDS = 20.0  # a case slower than this is named as it finishes (they are meant to take well under 1 s)
REPORT_PATH = Path(__file__).resolve().parent.parent / "CONFORMANCE.md"


def load_scenarios() -> None:
    for info in pkgutil.iter_modules(scenarios_package.__path__):
        importlib.import_module(f"{scenarios_package.__name__}.{info.name}")


@dataclass
class CaseResult:
    case: str
    api: str
    version: int | None
    covers: tuple[str, ...]
    kafka_steps: list[dict]
    our_steps: list[dict]
    differences: list[dict] = field(default_factory=list)  # {where, kafka, ours, kind, reason}
    kafka_failure: str | None = None
    our_failure: str | None = None
    seconds: float = 0.0

    @property
    def status(self) -> str:
        if any(d["kind"] == "unexplained" for d in self.differences):
            return "unexplained"
        if any(d["kind"] == "open" for d in self.differences):
            return "open"
        if self.differences:
            return "kept"
        return "identical"


class Brokers:
    """Both brokers of each profile, stopped once its cases are played (release) or at the end.

    `prepare(names)` starts the profiles' pairs in the order given, one after another, in a
    background thread, so the next profile's Kafka JVM and kafka-wire boot while the current
    profile's cases play (the cases wait on answers more than they use the cores); `pair(name)`
    waits for its own. A released pair is stopped in the background too."""

    def __init__(self, version: str, work_dir: Path):
        self.version = version
        self.work_dir = work_dir
        self.starting: dict[str, concurrent.futures.Future] = {}
        self.stacks: dict[str, contextlib.ExitStack] = {}  # started pairs not yet released
        self.lock = threading.Lock()
        self.starter = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="conformance-start")
        self.stopper = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="conformance-stop")

    def prepare(self, profile_names) -> None:
        for name in profile_names:
            if name not in self.starting:
                self.starting[name] = self.starter.submit(self._start_kept, PROFILES[name])

    def pair(self, profile_name: str) -> tuple[Target, Target]:
        self.prepare([profile_name])
        return self.starting[profile_name].result()

    def release(self, profile_name: str) -> None:
        with self.lock:
            stack = self.stacks.pop(profile_name, None)
        if stack is not None:
            self.stopper.submit(stack.close)

    def _start_kept(self, profile: Profile) -> tuple[Target, Target]:
        for attempt in range(3):
            stack = contextlib.ExitStack()
            with self.lock:
                self.stacks[profile.name] = stack
            try:
                return self._start(profile, stack)
            except ProcessFailure as failure:
                # A free port picked for the pair was taken by someone else (a client's outgoing
                # connection, say) before the broker bound it: the pair starts again on new ports.
                if "Address already in use" not in str(failure) or attempt == 2:
                    raise
                with self.lock:
                    self.stacks.pop(profile.name, None)
                stack.close()
                print(f"\nconformance: profile {profile.name}: a port was taken before its broker bound it; "
                      f"starting the pair again", flush=True)
        raise AssertionError("unreachable")

    def _start(self, profile: Profile, stack: contextlib.ExitStack) -> tuple[Target, Target]:
        from testing.broker_process import free_port, running_broker
        from client import ClientSecurity
        from compat.reference_kafka import running_reference_kafka

        print(f"conformance: starting Apache Kafka {self.version} and kafka-wire (profile {profile.name})",
              flush=True)
        ports = Ports(*(free_port() for _ in range(5)))
        kafka_config, our_config = profile.client_listener(ports) if profile.client_listener else ({}, {})
        our_dir = self.work_dir / f"kafka-wire-{profile.name}"
        if profile.scram_users:
            _add_scram_users(our_dir / "logs", profile.scram_users)  # testing.broker_process's log.dirs
        kafka = stack.enter_context(running_reference_kafka(
            self.version, data_dir=self.work_dir / f"kafka-{profile.name}", port=ports.kafka,
            controller_port=ports.kafka_controller,
            config={**profile.common, **profile.kafka_only, **kafka_config},
            format_args=profile.kafka_format_args + tuple(
                arg for name, password in profile.scram_users.items()
                for arg in ("--add-scram", f"SCRAM-SHA-256=[name={name},password={password}]"))))
        ours = stack.enter_context(running_broker(
            our_dir, port=ports.ours, config={**profile.common, **profile.ours_only, **our_config},
            require_clean_exit=False))
        for bootstrap in (kafka.bootstrap, ours.bootstrap) if profile.warm else ():
            _warm_up_coordinators(bootstrap)
        if not profile.client_listener:
            return (Target("kafka", kafka.bootstrap, self.version), Target("kafka-wire", ours.bootstrap, "kafka-wire"))
        security = None
        if profile.client_login:
            mechanism, user = profile.client_login
            security = ClientSecurity("SASL_PLAINTEXT", None, mechanism, user, profile.scram_users[user])
        return (Target("kafka", f"127.0.0.1:{ports.kafka_client}", self.version, security,
                       {"plaintext": kafka.bootstrap}),
                Target("kafka-wire", f"127.0.0.1:{ports.ours_client}", "kafka-wire", security,
                       {"plaintext": ours.bootstrap}))

    def close(self) -> None:
        for future in self.starting.values():
            future.cancel()
        for future in self.starting.values():  # a pair being started finishes starting
            if not future.cancelled():
                with contextlib.suppress(BaseException):
                    future.result()
        with self.lock:
            stacks, self.stacks = list(self.stacks.values()), {}
        for stack in stacks:
            self.stopper.submit(stack.close)
        self.stopper.shutdown(wait=True)
        # Only now: the brokers are SIGKILLed when the thread that spawned them ends
        # (testing/processes.py, PR_SET_PDEATHSIG), and that is the starter's.
        self.starter.shutdown(wait=True)


def _add_scram_users(data_dir: Path, users: dict) -> None:
    from broker.security.credentials import CredentialStore
    from kafka_wire.sasl import SCRAM_MECHANISMS

    store = CredentialStore(data_dir)
    for name, password in users.items():
        store.set_password(name, password, SCRAM_MECHANISMS["SCRAM-SHA-256"])


WARM_UP_SECONDS = 240.0


def _warm_up_coordinators(bootstrap: str) -> None:
    """Waits until the group and transaction coordinators answer on a fresh broker. Kafka creates
    __consumer_offsets and __transaction_state (50 partitions each) on the first FindCoordinator and
    loads them; on a busy machine that outlasts a case's patience, and the first group or
    transaction case would then see it. Nothing here is recorded: both brokers start warm."""
    from client import WireClient

    deadline = time.monotonic() + WARM_UP_SECONDS
    for key_type, key in ((0, "conformance-warm-up"), (1, "conformance-warm-up")):
        while True:
            try:
                with WireClient(bootstrap) as client:
                    answer = client.call("FindCoordinator", 3, {"key": key, "key_type": key_type})
                    if answer.error_code == 0:
                        if key_type == 0:
                            described = client.call("DescribeGroups", 5, {"groups": [key],
                                                                          "include_authorized_operations": False})
                            ready = described.groups[0].error_code == 0
                        else:
                            described = client.call("DescribeTransactions", 0, {"transactional_ids": [key]})
                            ready = described.transaction_states[0].error_code in (0, 105)  # not found: loaded
                        if ready:
                            break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the coordinators on {bootstrap} did not come up within {WARM_UP_SECONDS:.0f}s")
            time.sleep(0.5)


def advertised_versions(bootstrap: str) -> dict[int, tuple[int, int]]:
    from client import WireClient

    with WireClient(bootstrap) as client:
        return client.negotiate()


def expand(selected, our_versions: dict[int, tuple[int, int]],
           kafka_versions: dict[int, tuple[int, int]] | None = None) -> tuple[list[Case], list[str]]:
    """The cases to play, and the ones left out because the reference Kafka does not serve that
    version of the API (an answer it cannot give is not compared; the report's API table shows
    both sides' ranges)."""
    from kafka_wire.messages import APIS_BY_NAME

    cases, not_comparable = [], []
    for item in selected:
        if item.versions is None:
            cases.append(Case(item, None))
            continue
        key = APIS_BY_NAME[item.api].key
        if item.versions == ALL:
            low, high = our_versions.get(key, (0, -1))
            versions = range(low, high + 1)
        else:
            versions = item.versions
        for version in versions:
            case = Case(item, version)
            served = (kafka_versions or {}).get(key)
            if kafka_versions is not None and item.api != "ApiVersions" and \
                    (served is None or not served[0] <= version <= served[1]):
                not_comparable.append(case.name)
                continue
            cases.append(case)
    return cases, not_comparable


def play(case: Case, target: Target) -> tuple[list[dict], str | None]:
    session = Session(target, case)
    failure = None
    try:
        if case.version is None:
            case.scenario.fn(session)
        else:
            case.scenario.fn(session, case.version)
    except CaseFailed as error:
        failure = f"set-up failed: {error}"
    except Exception as error:  # a scenario error is a result too (both sides are compared)
        failure = f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=4)}"
    finally:
        session.close()
    return [step.as_dict() for step in session.steps], failure


USED_KNOWN: set[str] = set()  # known.py patterns that explained some difference in this run


# Plays a case on the reference Kafka while this thread plays it on kafka-wire: the two sessions
# share nothing (their own connections and brokers, names made from the case's name), and a case
# mostly waits on answers.
_KAFKA_SIDE = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="conformance-kafka")


def run_case(case: Case, kafka: Target, ours: Target) -> CaseResult:
    """Plays `case` on both brokers, side by side, and compares (differences explained against
    kafka.version)."""
    started = time.monotonic()
    kafka_side = _KAFKA_SIDE.submit(play, case, kafka)
    our_steps, our_failure = play(case, ours)
    kafka_steps, kafka_failure = kafka_side.result()
    result = CaseResult(case.name, case.scenario.api, case.version, case.scenario.covers, kafka_steps, our_steps,
                        kafka_failure=kafka_failure, our_failure=our_failure)
    differences: list[Difference] = compare_transcripts(case.name, normalise_transcript(kafka_steps),
                                                        normalise_transcript(our_steps))
    if bool(kafka_failure) != bool(our_failure) or (kafka_failure and our_failure and
                                                    kafka_failure.split(":")[0] != our_failure.split(":")[0]):
        differences.append(Difference(case.name, "case", "failure", _first_line(kafka_failure),
                                      _first_line(our_failure)))
    for difference in differences:
        known = explain(difference.where, kafka.version)
        if known is not None:
            USED_KNOWN.add(known.pattern)
        result.differences.append({"where": difference.where, "kafka": difference.kafka, "ours": difference.ours,
                                   "kind": known.kind if known else "unexplained",
                                   "reason": known.reason if known else ""})
    result.seconds = time.monotonic() - started
    _dump(result)
    return result


def _dump(result: CaseResult) -> None:
    """With KW_CONFORMANCE_DUMP=DIR, each case's two raw transcripts go to DIR/<case>.json (to read
    what both brokers answered when writing or debugging a scenario)."""
    folder = os.environ.get("KW_CONFORMANCE_DUMP")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{result.case}.json").write_text(json.dumps(
            {"kafka": result.kafka_steps, "kafka_failure": result.kafka_failure, "ours": result.our_steps,
             "our_failure": result.our_failure, "differences": result.differences}, indent=1, default=str))


def _first_line(text: str | None):
    return text.splitlines()[0] if text else None


def main(version: str, quick: bool = False, scenarios: str | None = None, report: Path | None = None) -> int:
    from .report import write_report

    load_scenarios()
    chosen = list(REGISTRY.values())
    if quick:
        chosen = [s for s in chosen if s.quick]
    if scenarios:
        wanted = [w.strip() for w in scenarios.split(",") if w.strip()]
        chosen = [s for s in chosen if any(s.name == w or s.name.startswith(w) or s.api == w for w in wanted)]
    if not chosen:
        print("conformance: no scenario selected", file=sys.stderr)
        return 2
    report_path = report or REPORT_PATH
    results: list[CaseResult] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="conformance-") as work:
        brokers = Brokers(version, Path(work))
        our_versions = kafka_versions = None
        not_comparable: list[str] = []
        try:
            by_profile: dict[str, list] = {}
            for item in chosen:
                by_profile.setdefault(item.profile, []).append(item)
            brokers.prepare(by_profile)
            for profile, items in by_profile.items():
                kafka, ours = brokers.pair(profile)
                if our_versions is None:
                    our_versions = advertised_versions(ours.bootstrap)
                    kafka_versions = advertised_versions(kafka.bootstrap)
                cases, skipped = expand(items, our_versions, kafka_versions)
                not_comparable += skipped
                for case in cases:
                    result = run_case(case, kafka, ours)
                    results.append(result)
                    mark = {"identical": ".", "kept": "k", "open": "o", "unexplained": "X"}[result.status]
                    print(mark, end="", flush=True)
                    if result.seconds > SLOW_CASE_SECONDS:
                        print(f"\nconformance: {result.case} took {result.seconds:.1f} s", flush=True)
                brokers.release(profile)
            print()
        finally:
            brokers.close()
    if not scenarios and not quick:
        from .known import KNOWN

        unused = [k.pattern for k in KNOWN if k.pattern not in USED_KNOWN
                  and (not k.kafka_versions or any(fnmatch.fnmatchcase(version, v) for v in k.kafka_versions))]
        for pattern in unused:
            print(f"conformance: known.py entry explained nothing in this run (stale?): {pattern}", flush=True)
    summary = write_report(report_path, version, results, our_versions or {}, kafka_versions or {},
                           time.monotonic() - started, quick=quick, subset=bool(scenarios),
                           not_comparable=not_comparable)
    for result in results:
        if result.status == "unexplained":
            for difference in result.differences:
                if difference["kind"] == "unexplained":
                    print(f"  unexplained: {difference['where']}: Kafka {_short(difference['kafka'])} "
                          f"| kafka-wire {_short(difference['ours'])}")
    print(f"conformance against Apache Kafka {version}: {summary['cases']} cases, {summary['identical']} identical, "
          f"{summary['kept']} kept, {summary['open']} open, {summary['unexplained']} unexplained "
          f"(report: {report_path})")
    return 1 if summary["unexplained"] else 0


def _short(value, limit: int = 160) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "..."
