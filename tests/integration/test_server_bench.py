"""Smoke run of the benchmark's code path (bench.run --smoke) against our broker: every scenario
runs end to end and the report has its rows. The numbers are not checked: no timed assertions."""

from __future__ import annotations

import subprocess
import sys

import pytest

from testing.broker_process import REPO_ROOT


@pytest.mark.timeout(420)  # every scenario at tiny sizes, on a shared 2-core machine
def test_bench_smoke_run_reports_every_measurement(tmp_path):
    output = tmp_path / "RESULTS.md"
    run = subprocess.run([sys.executable, "-m", "bench.run", "--smoke", "--brokers", "kafka-wire",
                          "--output", str(output)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=360)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = output.read_text()
    for row in ("produce 1 KiB, acks=1 | MB/s", "produce 100 B, acks=all, fsync per request | msg/s",
                "consume 1 KiB (librdkafka) | MB/s", "consume 1 KiB (raw Fetch requests)",
                "broker CPU per GB produced (1 KiB, acks=1)", "end-to-end latency p99",
                "start-to-ready (empty data directory)", "start-to-ready (restart)",
                "produce 1 KiB over 10 partitions", "produce 1 KiB from 2 connections",
                "consume a 0.01 GB log (raw)", "broker RSS idle (after start)",
                "produce 1 KiB, acks=1 (rdkafka_performance) | MB/s",
                "produce 100 B, acks=all, fsync per request (rdkafka_performance) | msg/s",
                "consume 1 KiB (rdkafka_performance)", "consume 1 KiB (ConsumerPerformance",
                "produce 1 KiB, acks=1 (ProducerPerformance)", "end-to-end latency p99.9, one record in flight",
                "produce 1 KiB over 10 partitions (rdkafka_performance)", "broker RSS under load",
                "end-to-end latency p99.9 at 1k msg/s (rdkafka_performance) | ms",
                "produce 1 KiB from 10 connections, one process (franz-go) | MB/s",
                "broker CPU per GB produced (franz-go, 10 connections", "2 consumer groups polling at once",
                "Produce requests per broker CPU second (10 connections) | req/CPU s",
                "records per Produce request (10 connections)",
                "until the last group was assigned | s", "broker CPU per GB consumed (2 groups, franz-go)",
                "broker CPU per GB produced (rdkafka_performance", "broker CPU per GB consumed (rdkafka_performance)",
                "W=2, one broker (kafka-wire: num.worker.processes=2): produce 1 KiB, acks=1, 16 partitions",
                "W=2, 2 separate kafka-wire brokers (one process each): broker CPU per GB consumed",
                "W=2, one broker (kafka-wire: num.worker.processes=2): end-to-end latency p99 at 1,000 records/s",
                "## One broker with W workers beside W separate brokers",
                "share consume 1 KiB, 2 consumers, one partition, all accepted (franz-go) | msg/s",
                "share delivery latency p99, 2 consumers, 1 KiB at 200 records/s (franz-go) | ms"):
        assert row in report, f"{row!r} missing from the report:\n{report}"
    assert "## Targets (issue 7)" in report
    assert "TCP loopback" in report and "fdatasync" in report


def test_registry_bench_smoke_run_reports_every_row():
    """bench/registry.py end to end at tiny sizes: both brokers start, every row and ratio is printed."""
    run = subprocess.run([sys.executable, "-m", "bench.registry", "--rounds", "1", "--lookups", "40",
                          "--registrations", "60", "--records", "300", "--produce-count", "2000"],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    for row in ("| start-to-ready, registry on (s) |", "| start-to-ready, registry off (s) |",
                "| produce 1 KiB acks=1, registry on (MB/s) |", "| produce 1 KiB acks=1, registry off (MB/s) |",
                "| POST /subjects/{s}/versions (registrations/s) |", "| GET /schemas/ids/{id} (lookups/s) |",
                "| Avro produce through AvroSerializer, ", "| plain consume, ", "| start-to-ready on/off |",
                "| produce on/off |", "| Avro produce / plain |", "| Avro consume / plain |"):
        assert row in run.stdout, f"{row!r} missing:\n{run.stdout[-3000:]}"
