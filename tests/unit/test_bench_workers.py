"""The workers benchmark (bench/scaling.py): broker CPU counts a broker's worker processes, and the
report compares W workers with W separate brokers and with one worker, saying when the broker ran
a single process whatever W asked for."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from bench.brokers import BrokerUnderTest, process_tree
from bench.run import Results
from bench.scaling import ONE_BROKER, SEPARATE, WorkerSizes, report_lines

# A parent that forks two children; each child burns CPU until the kernel has charged it 0.3 s
# (its own utime + stime in /proc/self/stat, the accounting bench/brokers.py reads: on a loaded
# virtual machine it can lag time.process_time, which counts stolen time too), says how many clock
# ticks and waits; the parent, when told, kills and reaps them and says so.
FORKING = textwrap.dedent("""
    import os, signal, sys
    def charged():
        fields = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    children = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            while charged() < 0.3 * os.sysconf("SC_CLK_TCK"):
                pass
            print("burnt", charged(), flush=True)
            while True:
                signal.pause()
        children.append(pid)
    sys.stdin.readline()
    for pid in children:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    print("reaped", flush=True)
    sys.stdin.read()
""")


class _Process(BrokerUnderTest):
    name = "forking"

    def __init__(self, workdir, process: subprocess.Popen):
        super().__init__(workdir)
        self._process = process

    @property
    def pid(self) -> int:
        return self._process.pid


def test_cpu_seconds_count_the_workers_a_broker_forks_before_and_after_they_exit(tmp_path):
    process = subprocess.Popen([sys.executable, "-c", FORKING], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    try:
        said = [process.stdout.readline().split() for _ in range(2)]
        assert [word for word, _ in said] == ["burnt", "burnt"]
        # What the kernel had charged both children (>= 0.3 s each): one child alone, or the parent,
        # is less than that.
        charged = sum(int(ticks) for _, ticks in said) / os.sysconf("SC_CLK_TCK")
        broker = _Process(tmp_path, process)
        assert len(process_tree(process.pid)) == 3
        assert broker.cpu_seconds() >= charged
        process.stdin.write("reap\n")
        process.stdin.flush()
        assert process.stdout.readline() == "reaped\n"
        assert process_tree(process.pid) == [process.pid]
        assert broker.cpu_seconds() >= charged  # now the parent's reaped-children time
    finally:
        process.stdin.close()
        process.wait(timeout=30)


def _results(processes_at_2: int) -> Results:
    results = Results()
    rows = {ONE_BROKER: {1: (100, 80, 2.0, 1.0, 5.0), 2: (180, 170, 2.1, 3.0, 6.0)},
            SEPARATE: {1: (110, 90, 2.0, 1.0, 4.0), 2: (200, 160, 1.9, 1.2, 4.5)}}
    for setup, by_count in rows.items():
        for count, (produce, consume, produce_cpu, consume_cpu, p99) in by_count.items():
            for what, value in (("produce", produce), ("consume", consume), ("produce-cpu", produce_cpu),
                                ("consume-cpu", consume_cpu), ("p99", p99)):
                results.add(f"{setup}-{count}-{what}", what, "-", "kafka-wire", value)
    results.add(f"{ONE_BROKER}-1-processes", "processes", "-", "kafka-wire", 1)
    results.add(f"{ONE_BROKER}-2-processes", "processes", "-", "kafka-wire", processes_at_2)
    return results


def test_report_compares_w_workers_with_w_separate_brokers_and_with_one_worker():
    text = "\n".join(report_lines(_results(processes_at_2=3), WorkerSizes()))
    # W=2: produce 180 vs 200 separate (0.90), vs 180/100 at W=1; consume 170 vs 160, 170/80.
    assert "| 2 | 180 | 200 | 0.90 | 1.80 | 170 | 160 | 1.06 | 2.12 |" in text
    # CPU per GB: produced 2.1 (separate 1.9, 1.05x W=1), consumed 3.0 (3.00x); cores used 180 x 2.1 / 1000.
    assert "| 2 | 3 | 2.1 | 1.9 | 1.05 | 3 | 1.2 | 3.00 | 0.38 | 0.38 | 6 | 4.5 |" in text
    assert "| broker CPU per GB produced: 2 workers <= 1.1x 1 worker (CPU s/GB) | 2.1 vs 2 = 1.05 | met |" in text
    assert "| broker CPU per GB consumed: 2 workers <= 1.1x 1 worker (CPU s/GB) | 3 vs 1 = 3.00 | MISSED |" in text
    assert "ran one process" not in text


def test_report_says_when_the_broker_ran_one_process_whatever_w_asked_for():
    text = "\n".join(report_lines(_results(processes_at_2=1), WorkerSizes()))
    assert "The broker ran one process at W = 2" in text
    assert "= 1.05 | not measured: one process ran |" in text
    assert "| met |" not in text and "MISSED" not in text
