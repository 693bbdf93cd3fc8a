"""kafka-python runs the client acceptance sequence (see acceptance.py) against a broker.

Usage: python kafka_python_check.py HOST:PORT [--records N] [--codecs none,gzip,...]
Exit status 0 when every check passed; 1 with the reason otherwise.
"""

from __future__ import annotations

import time

from acceptance import AcceptancePlan, ReceivedRecord, argument_parser, run_program, wait_until
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, OffsetSpec

CLIENT = "kafka-python"


def main() -> None:
    args = argument_parser(__doc__.splitlines()[0]).parse_args()
    run_program(CLIENT, lambda progress: check(progress, args))


def check(progress, args) -> None:
    plan = AcceptancePlan(CLIENT, args.codecs.split(","), records_per_codec=args.records)
    timeout_ms = int(args.timeout * 1000)
    common = {"bootstrap_servers": args.bootstrap, "client_id": "kafka-wire-check", "request_timeout_ms": timeout_ms}
    partitions = [TopicPartition(plan.topic, p) for p in range(plan.partitions)]
    progress.say(f"topic {plan.topic}, {plan.total} records, codecs {','.join(plan.codecs)}")

    with progress.step("connect admin client", ["metadata"]):
        admin = KafkaAdminClient(**common, bootstrap_timeout_ms=timeout_ms)

    with progress.step(f"create topic ({plan.partitions} partitions)", ["admin"]):
        admin.create_topics({plan.topic: {"num_partitions": plan.partitions, "replication_factor": 1}},
                            timeout_ms=timeout_ms)

    with progress.step("describe topic", ["metadata"]):
        def described():
            topics = admin.describe_topics([plan.topic])
            ready = [t for t in topics if t["name"] == plan.topic and t["error_code"] == 0
                     and len(t["partitions"]) == plan.partitions
                     and all(p["leader_id"] >= 0 for p in t["partitions"])]
            return ready
        wait_until(described, args.timeout, "the topic to have a leader for every partition")

    for codec in plan.codecs:
        with progress.step(f"produce {len(plan.for_codec(codec))} records, compression {codec}",
                           [f"produce:{codec}"]):
            producer = KafkaProducer(**common, compression_type=None if codec == "none" else codec,
                                     linger_ms=5)
            pending = [
                (record, producer.send(plan.topic, value=record.value, key=record.key,
                                       headers=list(record.headers), partition=record.partition,
                                       timestamp_ms=record.timestamp))
                for record in plan.for_codec(codec)
            ]
            producer.flush(timeout=args.timeout)
            for record, future in pending:
                metadata = future.get(timeout=args.timeout)
                plan.check_delivery(record, metadata.partition, metadata.offset)
            producer.close(timeout=args.timeout)

    consumer = KafkaConsumer(**common, group_id=None, enable_auto_commit=False,
                             key_deserializer=None, value_deserializer=None)
    with progress.check("read back everything (assign + seek_to_beginning, no group)", ["fetch"]):
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        received: list[ReceivedRecord] = []
        deadline = time.monotonic() + args.timeout
        while len(received) < plan.total and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                received.extend(
                    ReceivedRecord(tp.partition, r.offset, r.key, r.value,
                                   tuple((k, v) for k, v in r.headers), r.timestamp)
                    for r in records)
        progress.say(f"read {len(received)} of {plan.total} records")
        plan.check_received(received)

    everywhere = {p: 0 for p in range(plan.partitions)}
    nowhere = {p: -1 for p in range(plan.partitions)}
    target, at_target = plan.timestamp_probe()

    def by_partition(offsets):
        return {tp.partition: offset for tp, offset in offsets.items()}

    def found_offsets(offsets):  # offsets_for_times: None where no record is that late
        return {tp.partition: (-1 if found is None else found.offset) for tp, found in offsets.items()}

    with progress.check("consumer.beginning_offsets", ["list-offsets"]):
        plan.check_offsets("beginning_offsets", by_partition(consumer.beginning_offsets(partitions)), everywhere)
    with progress.check("consumer.end_offsets", ["list-offsets"]):
        plan.check_offsets("end_offsets", by_partition(consumer.end_offsets(partitions)), plan.log_end_offsets)
    with progress.check("consumer.offsets_for_times", ["list-offsets"]):
        got = found_offsets(consumer.offsets_for_times({tp: target for tp in partitions}))
        plan.check_offsets(f"offsets_for_times({target})", got, at_target)
        got = found_offsets(consumer.offsets_for_times({tp: plan.timestamp_after_last() for tp in partitions}))
        plan.check_offsets("offsets_for_times(after the last record)", got, nowhere)
    consumer.close()

    def listed(spec):
        return {tp.partition: found.offset
                for tp, found in admin.list_partition_offsets({tp: spec for tp in partitions}).items()}

    with progress.check("admin.list_partition_offsets earliest", ["list-offsets"]):
        plan.check_offsets("earliest", listed(OffsetSpec.EARLIEST), everywhere)
    with progress.check("admin.list_partition_offsets latest", ["list-offsets"]):
        plan.check_offsets("latest", listed(OffsetSpec.LATEST), plan.log_end_offsets)
    with progress.check("admin.list_partition_offsets by timestamp", ["list-offsets"]):
        plan.check_offsets(f"timestamp {target}", listed(target), at_target)
        plan.check_offsets("after the last record", listed(plan.timestamp_after_last()), nowhere)

    with progress.step("delete topic", ["admin"]):
        admin.delete_topics([plan.topic], timeout_ms=timeout_ms)
        wait_until(lambda: plan.topic not in admin.list_topics(), args.timeout, "the topic to disappear")
    admin.close()


if __name__ == "__main__":
    main()
