"""`kafka-wire compat faults`: runs nemesis x workload, checks each history, writes compat/FAULTS.md.

One run: a fresh FaultCluster (3 ZooKeeper nodes, 3 brokers, each in its own namespace), the
workload started, then for `seconds`: a few quiet seconds, the fault, heal, again; then heal,
restart anything down, wait for full ISRs, let the clients finish and drain every partition; the
history goes to <out>/<nemesis>-<workload>.jsonl and through the checker.

Results: every finished run writes `<results dir>/<nemesis>-<workload>.json` (counts per anomaly
class, operations, faults, a few examples, seconds, date, git commit, history path). The table
(compat/FAULTS.md for the full form, from compat/faults-results/) is rendered from ALL results
stored there, so the full form can be finished over several invocations: `--resume` skips every
run whose stored result covers the requested seconds without a harness error. `--parallel N` runs N
at once, each in its own process (its own cluster, namespaces, bridge and subnet; netns.py
allocates those under a lock) with its output in <out>/<nemesis>-<workload>.log.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import functools
import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

from testing.processes import die_with_parent, log_tail

from .checker import ANOMALY_CLASSES, Report, check
from .cluster import fault_cluster
from .history import HistoryRecorder
from .nemesis import NEMESES, QUICK, NemesisUnavailable
from .netns import why_unavailable
from .workloads import WORKLOADS

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
FAULTS_PATH = REPO_ROOT / "compat" / "FAULTS.md"
RESULTS_DIR = REPO_ROOT / "compat" / "faults-results"   # the full form's results, committed
NOTES_NAME = "NOTES.md"   # prose kept beside the results (diagnoses), rendered into the table's page
EXAMPLES_STORED = 3
QUICK_SECONDS = 20.0
FULL_SECONDS = 300.0
QUIET_SECONDS = 3.0
FAULT_SECONDS = 7.0


@dataclasses.dataclass
class RunResult:
    nemesis: str
    workload: str
    seconds: float
    report: Report | None = None
    faults: int = 0
    skipped: str | None = None      # why it did not run
    error: str | None = None        # the harness itself failed (not an anomaly)
    drained: bool = False
    client_errors: list[str] = dataclasses.field(default_factory=list)
    history_path: Path | None = None
    wall_seconds: float = 0.0
    # Documented anomalies a fault found in force added to the nemesis's own (nemesis.py).
    expected_anomalies: set = dataclasses.field(default_factory=set)

    @property
    def anomalies(self) -> int:
        return self.report.anomaly_count if self.report else 0

    @property
    def unexpected(self) -> int:
        """Anomalies that are not Kafka's documented behaviour under this nemesis."""
        expected = NEMESES[self.nemesis].expected_anomalies | self.expected_anomalies
        return sum(n for k, n in self.report.counts.items() if k not in expected) if self.report else 0


def run_one(nemesis_name: str, workload_name: str, seconds: float, out_dir: Path, seed: int | None = None,
            log=print) -> RunResult:
    result = RunResult(nemesis_name, workload_name, seconds)
    rng = random.Random(seed)
    history_path = out_dir / f"{nemesis_name}-{workload_name}.jsonl"
    result.history_path = history_path
    history = HistoryRecorder(history_path)
    started = time.monotonic()
    cluster_dir = out_dir / f"{nemesis_name}-{workload_name}"
    shutil.rmtree(cluster_dir, ignore_errors=True)  # a fresh cluster, also when out_dir is reused
    kind = NEMESES[nemesis_name]
    try:
        kind.check_available()
    except NemesisUnavailable as why:
        result.skipped = str(why)
        history.close()
        return result
    config = {"min.insync.replicas": 2, "unclean.leader.election.enable": False, **kind.broker_config,
              **WORKLOADS[workload_name].broker_config}
    try:
        with fault_cluster(3, config, keep_dir=cluster_dir, lazyfs=kind.needs_lazyfs) as cluster:
            workload = WORKLOADS[workload_name](cluster, history)
            nemesis = kind(cluster, history, workload, rng)
            try:
                workload.setup()
                workload.start()
                deadline = time.monotonic() + seconds
                while time.monotonic() + QUIET_SECONDS + FAULT_SECONDS <= deadline or result.faults == 0:
                    time.sleep(QUIET_SECONDS)
                    try:
                        nemesis.start()
                        result.faults += 1
                        time.sleep(FAULT_SECONDS)
                    finally:
                        nemesis.heal()
                time.sleep(max(0.0, deadline - time.monotonic()))
                workload.stop(timeout=20.0)
                result.drained = workload.finish()
                result.client_errors = list(workload.errors)
            finally:
                result.expected_anomalies = set(nemesis.expected_anomalies)
                workload.stopping.set()
                workload.close()
    except Exception as error:  # noqa: BLE001 - the harness failing is reported, the other runs go on
        result.error = f"{error!r}\n{traceback.format_exc()[-3000:]}"
    finally:
        history.close()
    result.report = check(history.operations)
    result.wall_seconds = time.monotonic() - started
    log(f"{nemesis_name} x {workload_name}: {time.monotonic() - started:.0f}s, {result.faults} faults, "
        f"{result.report.summary()}" + (f"; ERROR {result.error.splitlines()[0]}" if result.error else ""))
    return result



# -- stored results -------------------------------------------------------------------------------

def git_commit() -> str:
    """HEAD's short hash, `+dirty` when the broker's or the harness's code differs from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                              text=True, timeout=30)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "broker", "log",
                                "coordinator", "kafka_wire", "compat/faults"], cwd=REPO_ROOT, capture_output=True,
                               text=True, timeout=60).stdout.strip()
        return head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def result_record(result: RunResult, commit: str) -> dict:
    """What a results file holds (JSON): enough to render the run's row and examples."""
    report = result.report
    return {
        "nemesis": result.nemesis, "workload": result.workload, "seconds": result.seconds,
        "wall_seconds": round(result.wall_seconds, 1), "faults": result.faults,
        "skipped": result.skipped, "error": result.error[:3000] if result.error else None,
        "drained": result.drained, "client_errors": [str(e)[:300] for e in result.client_errors[:10]],
        "operations": report.operations if report else 0,
        "acknowledged": report.acknowledged if report else 0,
        "read": report.read if report else 0,
        "unknown": report.unknown if report else 0,
        "unchecked": report.unchecked if report else 0,
        "anomalies": dict(report.counts) if report else {},
        "expected_anomalies": sorted(NEMESES[result.nemesis].expected_anomalies | result.expected_anomalies),
        "examples": {kind: found[:EXAMPLES_STORED] for kind, found in report.anomalies.items() if found}
        if report else {},
        "history": str(result.history_path) if result.history_path else None,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit,
    }


def result_path(results_dir: Path, nemesis: str, workload: str) -> Path:
    return results_dir / f"{nemesis}-{workload}.json"


def store_result(results_dir: Path, record: dict) -> Path:
    results_dir.mkdir(parents=True, exist_ok=True)
    path = result_path(results_dir, record["nemesis"], record["workload"])
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    temporary.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    os.replace(temporary, path)  # a reader never sees half a file
    return path


def load_results(results_dir: Path) -> dict[tuple[str, str], dict]:
    """Every stored result, by (nemesis, workload); unreadable files and unknown names are left out."""
    found = {}
    for path in sorted(results_dir.glob("*.json")) if results_dir.is_dir() else []:
        try:
            record = json.loads(path.read_text())
            key = (record["nemesis"], record["workload"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if key[0] in NEMESES and key[1] in WORKLOADS:
            found[key] = record
    return found


def covers(record: dict | None, seconds: float) -> bool:
    """Whether a stored result makes a new run of `seconds` unnecessary (--resume)."""
    return (record is not None and not record.get("error") and not record.get("skipped")
            and float(record.get("seconds", 0)) >= seconds)


def expected_in(record: dict) -> set:
    """The anomalies documented as Kafka's behaviour for a stored run: its nemesis's, and those the
    run found grounds for (e.g. a power loss of the only in-sync replica)."""
    return set(NEMESES[record["nemesis"]].expected_anomalies) | set(record.get("expected_anomalies", []))


def unexpected(record: dict) -> int:
    """Anomalies that are not Kafka's documented behaviour under the record's nemesis."""
    expected = expected_in(record)
    return sum(n for k, n in record.get("anomalies", {}).items() if k not in expected)


def failed(record: dict) -> bool:
    return not record.get("skipped") and bool(unexpected(record) or record.get("error") or not record.get("drained"))


# -- the table ------------------------------------------------------------------------------------

def render(records: dict[tuple[str, str], dict], results_dir: Path | None = None) -> str:
    """compat/FAULTS.md from stored results (every nemesis x workload found, in NEMESES order)."""
    ordered = [records[(n, w)] for n in NEMESES for w in WORKLOADS if (n, w) in records]
    missing = [f"{n} x {w}" for n in NEMESES for w in WORKLOADS if (n, w) not in records]
    runs = [r for r in ordered if not r.get("skipped")]
    anomalies = sum(sum(r.get("anomalies", {}).values()) for r in runs)
    seconds = sorted({float(r["seconds"]) for r in runs})
    where = f" from the results in {_shown(results_dir)}" if results_dir is not None else ""
    lines = [
        "# Faults: nemesis x workload",
        "",
        f"Written by `kafka-wire compat faults`{where} "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}), one row per stored run (its seconds of "
        f"workload, date and the commit it ran; `+dirty`: with uncommitted changes). Faults of "
        f"{FAULT_SECONDS:.0f} s after {QUIET_SECONDS:.0f} s quiet, repeated. Each broker and each of three "
        "ZooKeeper nodes runs in its own network namespace; clients are librdkafka (confluent-kafka) in the "
        "root namespace. compat/faults/checker.py lists the anomaly classes.",
        "",
        f"{len(runs)} runs of {len(NEMESES) * len(WORKLOADS)} (nemesis x workload); "
        f"{sum(1 for r in runs if float(r['seconds']) >= FULL_SECONDS)} of them of at least {FULL_SECONDS:.0f} s"
        + (f" (seconds per run: {', '.join(f'{s:.0f}' for s in seconds)})" if seconds else "") + ".",
        "",
        "| nemesis | workload | faults | sends acked | values read | unknown | drained | anomalies | seconds "
        "| date | commit |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in ordered:
        when = f"{float(r['seconds']):.0f} | {r.get('date', '?')} | {r.get('commit', '?')}"
        if r.get("skipped"):
            lines.append(f"| {r['nemesis']} | {r['workload']} | skipped: {r['skipped']} | | | | | | {when} |")
            continue
        expected = expected_in(r)
        found = ", ".join(f"{k} {n}" + (" (documented Kafka behaviour)" if k in expected else "")
                          for k, n in r.get("anomalies", {}).items() if n) or "none"
        if r.get("error"):
            found += f" (harness error: {r['error'].splitlines()[0][:120]})"
        lines.append(f"| {r['nemesis']} | {r['workload']} | {r['faults']} | {r['acknowledged']} | {r['read']} "
                     f"| {r['unknown']} | {'yes' if r.get('drained') else 'NO'} | {found} | {when} |")
    if missing:
        lines += ["", f"Not run yet ({len(missing)}): {', '.join(missing)}."]
    lines += ["", "## Nemeses", ""]
    lines += [f"- `{name}`: {cls.description}" for name, cls in NEMESES.items()]
    examples = [(r, k, v) for r in runs for k, v in r.get("examples", {}).items() if v]
    if examples:
        lines += ["", "## Anomaly examples", ""]
        for r, kind, found in examples:
            lines.append(f"- {r['nemesis']} x {r['workload']}, {kind}: `{json.dumps(found[:3])[:600]}`")
    notes = results_dir / NOTES_NAME if results_dir is not None else None
    if notes is not None and notes.is_file():
        lines += ["", notes.read_text().strip()]
    outside = sum(unexpected(r) for r in runs)
    lines += ["", f"Of the {anomalies} anomalies, {outside} are not Kafka's documented behaviour under their "
                  "nemesis; the table marks the documented ones.",
              "", f"faults: {len(runs)} runs, {anomalies} anomalies", ""]
    return "\n".join(lines)


def _shown(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return f"{path.resolve().relative_to(REPO_ROOT)}/"
    return f"{path}/"


# -- running --------------------------------------------------------------------------------------

def run_and_store(nemesis: str, workload: str, seconds: float, out_dir: Path, results_dir: Path,
                  commit: str) -> dict:
    result = run_one(nemesis, workload, seconds, out_dir, log=lambda s: print(s, flush=True))
    record = result_record(result, commit)
    store_result(results_dir, record)
    return record


def run_in_child(nemesis: str, workload: str, seconds: float, out_dir: Path, results_dir: Path, commit: str,
                 children: dict, stopping: threading.Event) -> dict:
    """One run in its own process (`python -m compat.faults.run --one ...`); its result from its file."""
    log_path = out_dir / f"{nemesis}-{workload}.log"
    stored = result_path(results_dir, nemesis, workload)
    before = stored.stat().st_mtime_ns if stored.exists() else None
    argv = [sys.executable, "-m", "compat.faults.run", "--one", nemesis, workload, "--time", str(seconds),
            "--out-dir", str(out_dir), "--results-dir", str(results_dir), "--commit", commit]
    with open(log_path, "ab") as log:
        if stopping.is_set():
            raise KeyboardInterrupt
        process = subprocess.Popen(argv, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT,
                                   # SIGTERM, which removes its namespaces, when the runner dies
                                   preexec_fn=functools.partial(die_with_parent, signal.SIGTERM))
        children[(nemesis, workload)] = process
        # Its namespaces and links are named after this process id (netns.py).
        print(f"{nemesis} x {workload}: process {process.pid}", flush=True)
        try:
            status = process.wait()
        finally:
            children.pop((nemesis, workload), None)
    if stored.exists() and stored.stat().st_mtime_ns != before:
        record = json.loads(stored.read_text())
    else:
        record = result_record(RunResult(nemesis, workload, seconds,
                                         error=f"the run's process exited with status {status} without a result\n"
                                               f"{log_tail(log_path, 30)}"), commit)
        if not stopping.is_set():
            store_result(results_dir, record)
    return record


def _say_record(record: dict, parallel: bool) -> None:
    counts = ", ".join(f"{k} {n}" for k, n in record.get("anomalies", {}).items() if n) or "none"
    state = (f"skipped: {record['skipped']}" if record.get("skipped") else
             f"{record['faults']} faults, {record['operations']} operations, anomalies: {counts}"
             + (f"; ERROR {record['error'].splitlines()[0]}" if record.get("error") else ""))
    if parallel:
        print(f"{record['nemesis']} x {record['workload']}: {record.get('wall_seconds', 0):.0f}s, {state}",
              flush=True)


def main(quick: bool = False, nemeses: list[str] | None = None, workloads: list[str] | None = None,
         seconds: float | None = None, out_dir: Path | None = None, report: Path | None = FAULTS_PATH,
         results_dir: Path | None = None, parallel: int = 1, resume: bool = False) -> int:
    reason = why_unavailable()
    if reason is not None:
        print(f"kafka-wire compat faults: cannot run here: {reason}")
        return 2
    logging.getLogger("kazoo").setLevel(logging.ERROR)  # the monitors' (re)connects are no news
    # SIGTERM ends the run like Ctrl-C: every context manager removes its namespaces and processes.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    unknown = [n for n in nemeses or [] if n not in NEMESES] + [w for w in workloads or [] if w not in WORKLOADS]
    if unknown:
        print(f"unknown {unknown}; nemeses: {', '.join(NEMESES)}; workloads: {', '.join(WORKLOADS)}")
        return 2
    if quick and not nemeses and not workloads:
        pairs = list(QUICK)
    else:
        pairs = [(n, w) for n in nemeses or list(NEMESES) for w in workloads or list(WORKLOADS)]
    seconds = seconds if seconds is not None else (QUICK_SECONDS if quick else FULL_SECONDS)
    if out_dir is None:
        import tempfile

        out_dir = Path(tempfile.mkdtemp(prefix="kafka-wire-faults-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    results_dir = results_dir if results_dir is not None else out_dir / "results"
    stored = load_results(results_dir)
    todo = [p for p in pairs if not (resume and covers(stored.get(p), seconds))]
    kept = len(pairs) - len(todo)
    commit = git_commit()
    parallel = max(1, min(parallel, len(todo) or 1))
    print(f"kafka-wire compat faults: {len(todo)} runs (nemesis x workload), {seconds:.0f}s each, {parallel} at "
          f"once" + (f"; {kept} kept from {results_dir} (--resume)" if kept else "")
          + f"; histories in {out_dir}, results in {results_dir}", flush=True)
    records: dict[tuple[str, str], dict] = {p: stored[p] for p in pairs if p not in todo}
    if parallel == 1:
        for n, w in todo:
            records[(n, w)] = run_and_store(n, w, seconds, out_dir, results_dir, commit)
    else:
        children: dict = {}
        stopping = threading.Event()
        pool = concurrent.futures.ThreadPoolExecutor(parallel)
        futures = {pool.submit(run_in_child, n, w, seconds, out_dir, results_dir, commit, children, stopping): (n, w)
                   for n, w in todo}
        try:
            for future in concurrent.futures.as_completed(futures):
                records[futures[future]] = future.result()
                _say_record(records[futures[future]], parallel=True)
        except BaseException:
            stopping.set()  # Ctrl-C or SIGTERM: each running child removes its own namespaces
            for future in futures:
                future.cancel()
            for process in list(children.values()):
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
            for process in list(children.values()):
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=120)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    if report is not None:
        report.write_text(render(load_results(results_dir), results_dir))
    runs = [records[p] for p in pairs if p in records and not records[p].get("skipped")]
    anomalies = sum(sum(r.get("anomalies", {}).values()) for r in runs)
    print(f"faults: {len(runs)} runs, {anomalies} anomalies", flush=True)
    return 1 if any(failed(r) for r in runs) else 0


def _main_one(argv: list[str]) -> int:
    """`python -m compat.faults.run --one NEMESIS WORKLOAD ...`: one run, its result stored (the
    parallel runner's child)."""
    parser = argparse.ArgumentParser(prog="compat.faults.run")
    parser.add_argument("--one", nargs=2, metavar=("NEMESIS", "WORKLOAD"), required=True)
    parser.add_argument("--time", type=float, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--results-dir", type=Path, required=True)
    parser.add_argument("--commit", default=None)
    args = parser.parse_args(argv)
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    nemesis, workload = args.one
    record = run_and_store(nemesis, workload, args.time, args.out_dir, args.results_dir,
                           args.commit or git_commit())
    return 1 if failed(record) else 0


if __name__ == "__main__":
    if "--one" in sys.argv:
        sys.exit(_main_one(sys.argv[1:]))
    sys.exit(main(quick="--quick" in sys.argv))
