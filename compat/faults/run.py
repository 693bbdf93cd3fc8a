"""`kafka-wire compat faults`: runs nemesis x workload, checks each history, writes compat/FAULTS.md.

One run: a fresh FaultCluster (3 ZooKeeper nodes, 3 brokers, each in its own namespace), the
workload started, then for `seconds`: a few quiet seconds, the fault, heal, again; then heal,
restart anything down, wait for full ISRs, let the clients finish and drain every partition; the
history goes to <out>/<nemesis>-<workload>.jsonl and through the checker.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import shutil
import signal
import sys
import time
import traceback
from pathlib import Path

from .checker import ANOMALY_CLASSES, Report, check
from .cluster import fault_cluster
from .history import HistoryRecorder
from .nemesis import NEMESES, QUICK, NemesisUnavailable
from .netns import why_unavailable
from .workloads import WORKLOADS

FAULTS_PATH = Path(__file__).resolve().parent.parent / "FAULTS.md"
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

    @property
    def anomalies(self) -> int:
        return self.report.anomaly_count if self.report else 0

    @property
    def unexpected(self) -> int:
        """Anomalies that are not Kafka's documented behaviour under this nemesis."""
        expected = NEMESES[self.nemesis].expected_anomalies
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
    config = {"min.insync.replicas": 2, "unclean.leader.election.enable": False, **kind.broker_config}
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
                workload.stopping.set()
                workload.close()
    except Exception as error:  # noqa: BLE001 - the harness failing is reported, the other runs go on
        result.error = f"{error!r}\n{traceback.format_exc()[-3000:]}"
    finally:
        history.close()
    result.report = check(history.operations)
    log(f"{nemesis_name} x {workload_name}: {time.monotonic() - started:.0f}s, {result.faults} faults, "
        f"{result.report.summary()}" + (f"; ERROR {result.error.splitlines()[0]}" if result.error else ""))
    return result


def render(results: list[RunResult], quick: bool, seconds: float) -> str:
    from .nemesis import NEMESES as described

    runs = [r for r in results if not r.skipped]
    anomalies = sum(r.anomalies for r in runs)
    lines = [
        "# Faults: nemesis x workload",
        "",
        f"Written by `kafka-wire compat faults{' --quick' if quick else ''}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}); {seconds:.0f} s of workload per run, "
        f"faults of {FAULT_SECONDS:.0f} s after {QUIET_SECONDS:.0f} s quiet, repeated. Each broker and each of "
        "three ZooKeeper nodes runs in its own network namespace; clients are librdkafka (confluent-kafka) in "
        "the root namespace. compat/faults/checker.py lists the anomaly classes.",
        "",
        "| nemesis | workload | faults | sends acked | values read | unknown | drained | anomalies |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        if r.skipped:
            lines.append(f"| {r.nemesis} | {r.workload} | skipped: {r.skipped} | | | | | |")
            continue
        rep = r.report
        expected = NEMESES[r.nemesis].expected_anomalies
        found = ", ".join(f"{k} {n}" + (" (documented Kafka behaviour)" if k in expected else "")
                          for k, n in rep.counts.items() if n) or "none"
        if r.error:
            found += f" (harness error: {r.error.splitlines()[0][:120]})"
        lines.append(f"| {r.nemesis} | {r.workload} | {r.faults} | {rep.acknowledged} | {rep.read} | {rep.unknown} "
                     f"| {'yes' if r.drained else 'NO'} | {found} |")
    lines += ["", "## Nemeses", ""]
    lines += [f"- `{name}`: {cls.description}" for name, cls in described.items()]
    examples = [(r, k, v) for r in runs if r.report for k, v in r.report.anomalies.items()]
    if examples:
        lines += ["", "## Anomaly examples", ""]
        for r, kind, found in examples:
            lines.append(f"- {r.nemesis} x {r.workload}, {kind}: `{json.dumps(found[:3])[:600]}`")
    lines += ["", f"faults: {len(runs)} runs, {anomalies} anomalies", ""]
    return "\n".join(lines)


def main(quick: bool = False, nemeses: list[str] | None = None, workloads: list[str] | None = None,
         seconds: float | None = None, out_dir: Path | None = None, report: Path | None = FAULTS_PATH) -> int:
    reason = why_unavailable()
    if reason is not None:
        print(f"kafka-wire compat faults: cannot run here: {reason}")
        return 2
    logging.getLogger("kazoo").setLevel(logging.WARNING)  # the monitors' connects are no news
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
    print(f"kafka-wire compat faults: {len(pairs)} runs (nemesis x workload), {seconds:.0f}s each; "
          f"histories in {out_dir}", flush=True)
    results = [run_one(n, w, seconds, out_dir, log=lambda s: print(s, flush=True)) for n, w in pairs]
    text = render(results, quick, seconds)
    if report is not None:
        report.write_text(text)
    runs = [r for r in results if not r.skipped]
    anomalies = sum(r.anomalies for r in runs)
    failed = any(r.unexpected or r.error or not r.drained for r in runs)
    print(f"faults: {len(runs)} runs, {anomalies} anomalies", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(quick="--quick" in sys.argv))
