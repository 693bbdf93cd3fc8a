"""Share-group (KIP-932) consumption, measured by bench.run's `share` scenario (issue 27).

The load is bench/loadgen (franz-go v1.22.3's share consumer, compiled: no Python per record),
the same on every broker; both brokers run with share.version finalized at 1 (what a fresh
Kafka 4.3.0 and kafka-wire start with), and each measurement's group gets
share.auto.offset.reset=earliest through IncrementalAlterConfigs, as tests/integration/
test_share_groups.py sets it.

For N share consumers (1, 3, 8 by default), all members of one group on a topic of ONE partition:

- throughput: the partition is filled with R records of 1 KiB (loadgen produce), then the N
  consumers join at once and poll, accepting (AckAccept) every record they are delivered, until
  together they were delivered all R offsets and every acknowledgement was answered (FlushAcks).
  Rows: records/s from the first delivery to the last acknowledgement answered, seconds from
  joining to the first record, broker CPU per GB delivered (joining included), and records
  delivered more than once.
- latency: the N consumers join and each is delivered a warm-up record first; then a producer
  (acks=1, linger 0) sends 1 KiB records at a fixed rate while they poll and accept. Rows: p50
  and p99 of the delivery latency, from the send time stamped into each record to the poll that
  returned it, of every record sent after the warm-up second.

A measurement counts only when every record was delivered (each offset at least once; an offset
delivered again is counted and shown), no acknowledgement came back with an error, and the
broker says so too: the group's start offset of the partition (DescribeShareGroupOffsets v1, asked
until it moves or 60 s passed) is the partition's end offset, or its lag is 0 (Kafka 4.3.0 keeps
the persisted start offset one write behind: 1935 of 2000 here, with lag 0). Otherwise the
measurement fails and bench.run lists it under "Failed". Before its first round each broker runs
one unmeasured share group of 100 records (Kafka creates __share_group_state then).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from .admin import create_topic, delete_topic
from .fanout import LoadgenFailed, run_loadgen
from .latency import percentile

SIZE = 1024


@dataclass
class ShareSizes:
    consumers: list[int] = field(default_factory=lambda: [1, 3, 8])
    records: int = 200_000  # 1 KiB records on the partition per throughput measurement
    latency_rate: int = 1000  # records/s of the latency measurement
    latency_seconds: float = 10.0
    latency_warmup: float = 1.0  # records sent in this first stretch are left out of the percentiles


# bench.run's Sizes carry one of these (FULL by default).
QUICK = ShareSizes(records=50_000, latency_seconds=5.0)
SMOKE = ShareSizes(consumers=[1, 2], records=2000, latency_rate=200, latency_seconds=1.5, latency_warmup=0.5)


def check(result: dict, expected_records: int, what: str) -> None:
    """Every record delivered and accepted, no ack errors, and the broker's start offset at the
    end of the partition: otherwise the measurement is void."""
    problems = []
    if result.get("delivered_offsets") != expected_records:
        problems.append(f"{result.get('delivered_offsets')} of {expected_records} offsets delivered")
    if result.get("ack_error_count"):
        problems.append(f"{result['ack_error_count']} acknowledgements failed: {result.get('errors')}")
    if result.get("error_count"):
        problems.append(f"{result['error_count']} records not produced: {result.get('errors')}")
    if result.get("accepted_through") != result.get("end_offset") and result.get("lag") != 0:
        problems.append(f"the group's start offset is {result.get('accepted_through')}, not the end offset "
                        f"{result.get('end_offset')}, and its lag {result.get('lag')}: not every record was accepted")
    if problems:
        raise LoadgenFailed(f"{what}: " + "; ".join(problems))


def fill(broker, topic: str, records: int) -> None:
    """A topic of one partition holding `records` records of 1 KiB."""
    create_topic(broker.bootstrap, topic, 1)
    # loadgen produce sends one record per client before its R: the partition holds R in all.
    run_loadgen(broker, "produce", "-topic", topic, "-connections", "1", "-records", str(records - 1),
                "-size", str(SIZE))


def consume(broker, topic: str, consumers: int, records: int):
    run = run_loadgen(broker, "share", "-topic", topic, "-group", f"share-bench-{uuid.uuid4().hex[:8]}",
                      "-consumers", str(consumers), "-records", str(records))
    check(run.result, records, f"share, {consumers} consumers")
    return run


def share(broker, sizes, results, round_no: int) -> None:
    """Share consumers on one partition: records/s until all are accepted, and delivery latency
    at a fixed produce rate."""
    s = sizes.share
    name = broker.name
    if round_no == 0:
        # Not measured: the first share group of a broker's life pays for set-up (Kafka creates
        # its __share_group_state topic then: 20 s here on the first run).
        fill(broker, f"share-warm-up-{round_no}", 100)
        consume(broker, f"share-warm-up-{round_no}", 1, 100)
        delete_topic(broker.bootstrap, f"share-warm-up-{round_no}")
    for n in s.consumers:
        consumers = f"{n} consumer{'s' if n > 1 else ''}"
        topic = f"share-{n}-{round_no}"
        fill(broker, topic, s.records)
        run = consume(broker, topic, n, s.records)
        r = run.result
        # Records/s from the first delivery: joining the group is the row after it.
        rate = s.records / (r["end"] - r["first"])
        label = f"share consume 1 KiB, {consumers}, one partition, all accepted (franz-go)"
        results.add(f"share-{n}-msg", label, "msg/s", name, rate)
        results.add(f"share-{n}-first", f"share {consumers}: from joining to the first record", "s", name,
                    r["first"], higher_is_better=False)
        results.add(f"share-{n}-cpu", f"broker CPU per GB share-consumed ({consumers}, joining included)",
                    "CPU s/GB", name, run.cpu_per_gb, higher_is_better=False)
        results.add(f"share-{n}-redelivered", f"share {consumers}: records delivered more than once", "records",
                    name, r["duplicates"], higher_is_better=False)
        print(f"  {name}, share, {consumers}: {rate:,.0f} records/s, first record after {r['first']:.2f} s, "
              f"{r['duplicates']} delivered more than once", flush=True)
        delete_topic(broker.bootstrap, topic)

        topic = f"share-latency-{n}-{round_no}"
        create_topic(broker.bootstrap, topic, 1)
        group = f"share-bench-{uuid.uuid4().hex[:8]}"
        run = run_loadgen(broker, "share-latency", "-topic", topic, "-group", group, "-consumers", str(n),
                          "-rate", str(s.latency_rate), "-seconds", f"{s.latency_seconds}s", "-size", str(SIZE),
                          "-warmup", f"{s.latency_warmup}s")
        r = run.result
        # Sentinels (one per 20 ms until every consumer had one) precede the measured records.
        check(r, r["end_offset"], f"share latency, {consumers}")
        if r["messages"] != r["produced"]:
            raise LoadgenFailed(f"share latency, {consumers}: {r['messages']} of {r['produced']} records received")
        delivery = sorted(r["delivery_us"] or ())
        if not delivery:
            raise LoadgenFailed(f"share latency, {consumers}: no record past the warm-up")
        rate = f"{s.latency_rate:,} records/s"
        for q, label in ((0.50, "p50"), (0.99, "p99")):
            results.add(f"share-{n}-latency-{label}",
                        f"share delivery latency {label}, {consumers}, 1 KiB at {rate} (franz-go)", "ms", name,
                        percentile(delivery, q) / 1000, higher_is_better=False)
        print(f"  {name}, share latency, {consumers}: rate reached {r['rate']:.0f}/s, {r['warm']}/{n} consumers "
              f"had a record before, p99 {percentile(delivery, 0.99) / 1000:.2f} ms", flush=True)
        delete_topic(broker.bootstrap, topic)


SCENARIOS = {"share": share}
