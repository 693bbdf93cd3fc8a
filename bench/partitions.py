"""What partitions cost a broker: create N partitions (topics of 100), write one record to each,
read them all, restart; report time, RSS and open file descriptors at each step.

    .venv/bin/python -m bench.partitions --partitions 10000             # kafka-wire
    .venv/bin/python -m bench.partitions --partitions 10000 --kafka     # Apache Kafka 4.3.0 too

The numbers per partition (RSS and descriptors divided by N, over an empty broker) are what
bench/SCALING.md extrapolates to 100,000 partitions. Requests go over the wire (WireClient:
CreateTopics with 10 topics each, one Produce and one Fetch request per topic), so the client's
own cost is small next to the broker's.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from client import WireClient
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch, decode_batches

from .brokers import BrokerUnderTest, OurBroker, scratch_dir

PER_TOPIC = 100
TOPICS_PER_REQUEST = 10


def open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def create_partitions(client: WireClient, total: int) -> list[str]:
    topics = [f"p{i:05d}" for i in range(total // PER_TOPIC)]
    for start in range(0, len(topics), TOPICS_PER_REQUEST):
        names = topics[start:start + TOPICS_PER_REQUEST]
        response = client.call("CreateTopics", 5, {"topics": [
            {"name": name, "num_partitions": PER_TOPIC, "replication_factor": 1, "assignments": [], "configs": []}
            for name in names], "timeout_ms": 600_000, "validate_only": False})
        for topic in response.topics:
            if topic.error_code:
                raise RuntimeError(f"CreateTopics {topic.name}: {ErrorCode(topic.error_code).name} "
                                   f"{topic.error_message}")
    return topics


def wait_for_leaders(client: WireClient, topics: list[str], timeout: float = 600) -> None:
    """Kafka creates partitions asynchronously: wait until Metadata shows every leader."""
    deadline = time.monotonic() + timeout
    pending = list(topics)
    while pending and time.monotonic() < deadline:
        response = client.call("Metadata", 4, {"topics": [{"name": t} for t in pending[:500]],
                                               "allow_auto_topic_creation": False})
        ready = {t.name for t in response.topics
                 if t.error_code == 0 and len(t.partitions) == PER_TOPIC
                 and all(p.leader_id >= 0 for p in t.partitions)}
        pending = [t for t in pending if t not in ready]
        if pending:
            time.sleep(0.2)
    if pending:
        raise RuntimeError(f"{len(pending)} topics without leaders after {timeout} s")


def produce_everywhere(client: WireClient, topics: list[str]) -> None:
    batch = build_batch([Record(0, 0, b"k", b"v" * 100)])
    for topic in topics:
        for _ in range(30):
            response = client.call("Produce", 7, {"transactional_id": None, "acks": 1, "timeout_ms": 30000,
                                                  "topic_data": [{"name": topic, "partition_data": [
                                                      {"index": p, "records": batch} for p in range(PER_TOPIC)]}]})
            errors = [p.error_code for p in response.responses[0].partition_responses if p.error_code]
            if not errors:
                break
            time.sleep(0.5)  # Kafka: a partition's leadership not yet known
        else:
            raise RuntimeError(f"Produce {topic}: {[ErrorCode(e).name for e in errors][:5]}")


def fetch_everywhere(client: WireClient, topics: list[str]) -> int:
    records = 0
    for topic in topics:
        response = client.call("Fetch", 11, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 64 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": topic, "partitions": [
                {"partition": p, "current_leader_epoch": -1, "fetch_offset": 0, "log_start_offset": -1,
                 "partition_max_bytes": 1 << 16} for p in range(PER_TOPIC)]}]})
        for part in response.responses[0].partitions:
            if part.error_code:
                raise RuntimeError(f"Fetch {topic}-{part.partition_index}: {ErrorCode(part.error_code).name}")
            records += sum(len(r) for _, r in decode_batches(bytes(part.records or b"")))
    return records


def measure(broker: BrokerUnderTest, total: int) -> dict[str, float]:
    row: dict[str, float] = {}
    row["ready_empty_s"] = broker.start(timeout=300)
    time.sleep(1)
    row["rss_idle_mb"] = broker.rss_bytes() / 1e6
    row["fds_idle"] = open_descriptors(broker.pid)
    with WireClient(broker.bootstrap, timeout=900) as client:
        started = time.monotonic()
        topics = create_partitions(client, total)
        wait_for_leaders(client, topics)
        row["create_s"] = time.monotonic() - started
        row["rss_created_mb"] = broker.rss_bytes() / 1e6
        row["fds_created"] = open_descriptors(broker.pid)
        started = time.monotonic()
        produce_everywhere(client, topics)
        row["produce_s"] = time.monotonic() - started
        started = time.monotonic()
        read = fetch_everywhere(client, topics)
        row["fetch_s"] = time.monotonic() - started
        if read != total:
            raise RuntimeError(f"read {read} records of {total}")
        row["rss_written_mb"] = broker.rss_bytes() / 1e6
        row["fds_written"] = open_descriptors(broker.pid)
    broker.stop()
    row["ready_restart_s"] = broker.start(timeout=900)
    with WireClient(broker.bootstrap, timeout=900) as client:
        wait_for_leaders(client, topics)
        row["restart_to_leaders_s"] = row["ready_restart_s"]
        row["rss_restarted_mb"] = broker.rss_bytes() / 1e6
        row["fds_restarted"] = open_descriptors(broker.pid)
    broker.stop()
    row["rss_per_partition_kb"] = (row["rss_written_mb"] - row["rss_idle_mb"]) * 1000 / total
    row["fds_per_partition"] = (row["fds_written"] - row["fds_idle"]) / total
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000, help="a multiple of 100")
    parser.add_argument("--kafka", action="store_true", help="Apache Kafka 4.3.0 as well (the reference broker)")
    parser.add_argument("--set", action="append", default=[], help="a kafka-wire broker setting key=value")
    args = parser.parse_args(argv)
    scratch = scratch_dir()
    brokers: list[BrokerUnderTest] = [OurBroker(scratch / "kafka-wire", dict(s.split("=", 1) for s in args.set))]
    if args.kafka:
        from .brokers import ApacheKafka

        brokers.append(ApacheKafka(scratch / "kafka"))
    print(f"{args.partitions} partitions ({args.partitions // PER_TOPIC} topics of {PER_TOPIC}), "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
          f"RLIMIT_NOFILE {os.sysconf('SC_OPEN_MAX')}")
    try:
        for broker in brokers:
            row = measure(broker, args.partitions)
            print(f"{broker.name}: " + ", ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}"
                                                 for k, v in row.items()), flush=True)
    finally:
        for broker in brokers:
            broker.stop()
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
