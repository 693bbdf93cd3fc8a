"""Load from compiled clients: librdkafka's rdkafka_performance (C) and Kafka's own ProducerPerformance,
ConsumerPerformance and EndToEndLatency (Java, Kafka 4.3.0's kafka-tools jar), run as separate processes.

No Python loop touches a message here: each tool measures itself and prints its numbers, which
these functions parse. rdkafka_performance is built on first use in the librdkafka source tree
that compat/setup-librdkafka.sh builds (Debian's librdkafka source); the Java tools run from
.deps/kafka-4.3.0/libs through compat.reference_kafka.java_command, as bin/kafka-*.sh would.
"""

from __future__ import annotations

import re
import resource
import subprocess
from pathlib import Path

from testing.broker_process import REPO_ROOT

_BUILT = REPO_ROOT / ".deps" / "librdkafka" / "BUILT"
TOOL_TIMEOUT = 900


class ToolFailed(RuntimeError):
    pass


def rdkafka_performance() -> Path | None:
    """The rdkafka_performance binary, built on first use (a few seconds: `make rdkafka_performance`
    in examples/ of the librdkafka tree compat/setup-librdkafka.sh built, which scripts/setup-tests.sh
    runs); None when there is no such tree."""
    try:
        source = Path(_BUILT.read_text().strip())
    except OSError:
        return None
    binary = source / "examples" / "rdkafka_performance"
    if not binary.is_file():
        done = subprocess.run(["make", "-s", "-C", str(source / "examples"), "rdkafka_performance"],
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise ToolFailed(f"building rdkafka_performance failed: {done.stdout[-1500:]}{done.stderr[-1500:]}")
    return binary


def java_tools_installed() -> bool:
    from compat.reference_kafka import KAFKA_4, is_installed

    return is_installed(KAFKA_4)


def _run(command: list[str], timeout: float = TOOL_TIMEOUT, exit_codes: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if done.returncode not in exit_codes:
        raise ToolFailed(f"{Path(command[0]).name} ... exited {done.returncode}: "
                         f"{done.stdout[-1500:]}{done.stderr[-1500:]}")
    return done.stdout


def _table_row(output: str, columns: list[str]) -> dict[str, float]:
    """The last row of rdkafka_performance's `-u` table, by column name."""
    header, last = None, None
    for line in output.splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and cells[0] == "elapsed":
            header = cells
        elif header is not None:
            last = cells
    if header is None or last is None:
        raise ToolFailed(f"rdkafka_performance printed no stats table: {output[-1500:]}")
    row = dict(zip(header, last))
    return {column: float(row[column]) for column in columns}


def rdkafka_produce(bootstrap: str, topic: str, count: int, size: int, acks: int,
                    partition: int | None = 0) -> dict[str, float]:
    """rdkafka_performance -P: {'msg/s', 'MB/s'} from its delivery reports (linger.ms=5, no
    compression, no idempotence, as bench.load's librdkafka producer). partition None: random."""
    binary = rdkafka_performance()
    command = [str(binary), "-P", "-t", topic, "-b", bootstrap, "-s", str(size), "-c", str(count),
               "-a", str(acks), "-u", "-q", "-X", "linger.ms=5", "-X", "message.timeout.ms=120000",
               "-X", "queue.buffering.max.messages=1000000",
               "-X", "queue.buffering.max.kbytes=1048576"]
    if partition is not None:
        command += ["-p", str(partition)]
    # It exits 1 when its produced count, less rd_kafka_outq_len() at the end, differs from its
    # delivered count; outq_len also counts a request still in flight (a metadata refresh), so a
    # run with every message delivered can exit 1. The delivery-report columns decide instead.
    row = _table_row(_run(command, exit_codes=(0, 1)), ["dr", "dr_m/s", "dr_MB/s", "dr_err"])
    if row["dr_err"] or row["dr"] < count:
        raise ToolFailed(f"rdkafka_performance delivered {row['dr']:.0f} of {count} ({row['dr_err']:.0f} errors)")
    return {"msg/s": row["dr_m/s"], "MB/s": row["dr_MB/s"] * 1.048576}  # its MB is MiB


def rdkafka_consume(bootstrap: str, topic: str, count: int) -> dict[str, float]:
    """rdkafka_performance -C from the beginning of partition 0: {'msg/s', 'MB/s'}."""
    binary = rdkafka_performance()
    command = [str(binary), "-C", "-t", topic, "-p", "0", "-b", bootstrap, "-c", str(count), "-o", "beginning",
               "-u", "-q"]
    row = _table_row(_run(command), ["msgs", "m/s", "MB/s"])
    if row["msgs"] < count:
        raise ToolFailed(f"rdkafka_performance consumed {row['msgs']:.0f} of {count}")
    return {"msg/s": row["m/s"], "MB/s": row["MB/s"] * 1.048576}


def _java(main_class: str, *args: str) -> str:
    from compat.reference_kafka import KAFKA_4, java_command

    return _run(java_command(KAFKA_4, main_class, *args))


_PRODUCER_SUMMARY = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg "
                               r"latency, ([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th")


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def java_produce(bootstrap: str, topic: str, count: int, size: int, acks: int) -> dict[str, float]:
    """Kafka's ProducerPerformance (kafka-producer-perf-test.sh), unthrottled, linger.ms=5:
    {'msg/s', 'MB/s', 'p99 ms'} from its summary line, and 'client CPU s': the CPU time the tool's
    JVM used (all threads; run alone, so the children's rusage is its own). On this 2-core machine
    the tool is the bottleneck: it uses about twice kafka-wire's CPU for the same records, a third
    of it in the JIT compilers (bench/RESULTS-KAFKA.md, notes)."""
    cpu_before = _children_cpu_seconds()
    out = _java("org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", str(count),
                "--record-size", str(size), "--throughput", "-1", "--command-property",
                f"bootstrap.servers={bootstrap}", f"acks={'all' if acks == -1 else acks}", "linger.ms=5")
    found = _PRODUCER_SUMMARY.findall(out)
    if not found:
        raise ToolFailed(f"ProducerPerformance printed no summary: {out[-1500:]}")
    sent, per_s, mb_s, _, _, _, _, p99 = found[-1]
    if int(sent) < count:
        raise ToolFailed(f"ProducerPerformance sent {sent} of {count}")
    return {"msg/s": float(per_s), "MB/s": float(mb_s) * 1.048576, "p99 ms": float(p99),
            "client CPU s": _children_cpu_seconds() - cpu_before}


def java_consume(bootstrap: str, topic: str, count: int) -> dict[str, float]:
    """Kafka's ConsumerPerformance (kafka-consumer-perf-test.sh, a group consumer): {'MB/s'} as its
    fetch.MB.sec (the rate once the group has joined; MB.sec includes the join)."""
    out = _java("org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", bootstrap, "--topic", topic,
                "--num-records", str(count), "--timeout", "120000")
    lines = [line for line in out.splitlines() if line and line[0].isdigit()]
    if not lines:
        raise ToolFailed(f"ConsumerPerformance printed no result: {out[-1500:]}")
    fields = [f.strip() for f in lines[-1].split(",")]
    consumed = int(fields[4])
    if consumed < count:
        raise ToolFailed(f"ConsumerPerformance consumed {consumed} of {count}")
    return {"MB/s": float(fields[8]) * 1.048576, "MB/s with join": float(fields[3]) * 1.048576}


_PERCENTILES = re.compile(r"Percentiles: 50th = ([\d.]+), 99th = ([\d.]+), 99.9th = ([\d.]+)")


def java_end_to_end_latency(bootstrap: str, topic: str, count: int, size: int = 100) -> dict[str, float]:
    """Kafka's EndToEndLatency: one record at a time, produced (acks=1) and consumed before the
    next is sent; {'p50 ms', 'p99 ms', 'p99.9 ms'} (Kafka prints whole milliseconds)."""
    out = _java("org.apache.kafka.tools.EndToEndLatency", "--bootstrap-server", bootstrap, "--topic", topic,
                "--num-records", str(count), "--producer-acks", "1", "--record-size", str(size))
    found = _PERCENTILES.search(out)
    if not found:
        raise ToolFailed(f"EndToEndLatency printed no percentiles: {out[-1500:]}")
    return {"p50 ms": float(found[1]), "p99 ms": float(found[2]), "p99.9 ms": float(found[3])}
