"""confluent-kafka (librdkafka) runs the client acceptance sequence (see acceptance.py) against a broker.

Usage: python confluent_check.py HOST:PORT [--records N] [--codecs none,gzip,...] [--idempotent]
Exit status 0 when every check passed; 1 with the reason otherwise.
"""

from __future__ import annotations

import time

from acceptance import AcceptancePlan, CheckFailed, ReceivedRecord, argument_parser, run_program, wait_until
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

CLIENT = "confluent-kafka"


def main() -> None:
    parser = argument_parser(__doc__.splitlines()[0])
    parser.add_argument("--idempotent", action="store_true", help="produce with enable.idempotence=true")
    args = parser.parse_args()
    run_program(CLIENT, lambda progress: check(progress, args))


def check(progress, args) -> None:
    plan = AcceptancePlan(CLIENT, args.codecs.split(","), records_per_codec=args.records)
    timeout_ms = int(args.timeout * 1000)
    common = {"bootstrap.servers": args.bootstrap, "client.id": "kafka-wire-check",
              "socket.timeout.ms": timeout_ms, "error_cb": lambda error: progress.say(f"librdkafka: {error}")}
    progress.say(f"topic {plan.topic}, {plan.total} records, codecs {','.join(plan.codecs)}")

    admin = AdminClient(common)

    def settle(futures: dict, what: str):
        results = {}
        for key, future in futures.items():
            try:
                results[key] = future.result(timeout=args.timeout)
            except Exception as error:  # KafkaException wraps the broker's error code
                raise CheckFailed(f"{what} for {key}: {error!r}") from error
        return results

    with progress.step(f"create topic ({plan.partitions} partitions)", ["admin"]):
        settle(admin.create_topics([NewTopic(plan.topic, num_partitions=plan.partitions, replication_factor=1)],
                                   operation_timeout=args.timeout, request_timeout=args.timeout), "CreateTopics")

    with progress.step("describe topic", ["metadata"]):
        def described():
            topics = admin.describe_topics(TopicCollection([plan.topic]), request_timeout=args.timeout)
            description = topics[plan.topic].result(timeout=args.timeout)
            return (len(description.partitions) == plan.partitions
                    and all(p.leader is not None for p in description.partitions))
        wait_until(described, args.timeout, "the topic to have a leader for every partition")

    for codec in plan.codecs:
        with progress.step(f"produce {len(plan.for_codec(codec))} records, compression {codec}",
                           [f"produce:{codec}", *(["idempotence"] if args.idempotent else [])]):
            config = {**common, "compression.type": codec, "linger.ms": 5}
            if args.idempotent:
                config["enable.idempotence"] = True
            producer = Producer(config)
            delivered: dict[int, tuple[int, int] | KafkaError] = {}

            def on_delivery(error, message, index):
                delivered[index] = error if error else (message.partition(), message.offset())

            records = plan.for_codec(codec)
            for record in records:
                producer.produce(plan.topic, value=record.value, key=record.key, partition=record.partition,
                                 timestamp=record.timestamp, headers=list(record.headers),
                                 on_delivery=lambda e, m, i=record.index: on_delivery(e, m, i))
            remaining = producer.flush(args.timeout)
            if remaining:
                raise CheckFailed(f"{remaining} records still undelivered after {args.timeout:.0f}s")
            for record in records:
                outcome = delivered.get(record.index)
                if not isinstance(outcome, tuple):
                    raise CheckFailed(f"record {record.index} ({codec}) not delivered: {outcome}")
                plan.check_delivery(record, *outcome)

    # librdkafka's Consumer requires a group.id even when it only assigns; the group is never
    # joined (no subscribe) and no offset is committed (enable.auto.commit=false).
    consumer = Consumer({**common, "group.id": f"{plan.topic}-unused", "enable.auto.commit": False,
                         "enable.auto.offset.store": False})
    with progress.check("read back everything (assign OFFSET_BEGINNING, no subscribe)", ["fetch"]):
        consumer.assign([TopicPartition(plan.topic, p, OFFSET_BEGINNING) for p in range(plan.partitions)])
        received: list[ReceivedRecord] = []
        deadline = time.monotonic() + args.timeout
        while len(received) < plan.total and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=500, timeout=0.5):
                if message.error():
                    raise CheckFailed(f"consume error: {message.error()}")
                received.append(ReceivedRecord(message.partition(), message.offset(), message.key(),
                                               message.value(), tuple(message.headers() or ()),
                                               message.timestamp()[1]))
        progress.say(f"read {len(received)} of {plan.total} records")
        plan.check_received(received)

    target, at_target = plan.timestamp_probe()
    nowhere = {p: -1 for p in range(plan.partitions)}

    with progress.check("consumer.get_watermark_offsets", ["list-offsets"]):
        low_high = {p: consumer.get_watermark_offsets(TopicPartition(plan.topic, p), timeout=args.timeout)
                    for p in range(plan.partitions)}
        plan.check_offsets("low watermarks", {p: lh[0] for p, lh in low_high.items()},
                           {p: 0 for p in range(plan.partitions)})
        plan.check_offsets("high watermarks", {p: lh[1] for p, lh in low_high.items()}, plan.log_end_offsets)
    with progress.check("consumer.offsets_for_times", ["list-offsets"]):
        def for_times(timestamp):
            found = consumer.offsets_for_times(
                [TopicPartition(plan.topic, p, timestamp) for p in range(plan.partitions)], timeout=args.timeout)
            return {tp.partition: tp.offset for tp in found}
        plan.check_offsets(f"offsets_for_times({target})", for_times(target), at_target)
        plan.check_offsets("offsets_for_times(after the last record)", for_times(plan.timestamp_after_last()),
                           nowhere)
    consumer.close()

    def listed(spec):
        futures = admin.list_offsets({TopicPartition(plan.topic, p): spec for p in range(plan.partitions)},
                                     request_timeout=args.timeout)
        return {tp.partition: info.offset for tp, info in settle(futures, "ListOffsets").items()}

    with progress.check("admin.list_offsets earliest", ["list-offsets"]):
        plan.check_offsets("earliest", listed(OffsetSpec.earliest()), {p: 0 for p in range(plan.partitions)})
    with progress.check("admin.list_offsets latest", ["list-offsets"]):
        plan.check_offsets("latest", listed(OffsetSpec.latest()), plan.log_end_offsets)
    with progress.check("admin.list_offsets for_timestamp", ["list-offsets"]):
        plan.check_offsets(f"timestamp {target}", listed(OffsetSpec.for_timestamp(target)), at_target)
        plan.check_offsets("after the last record", listed(OffsetSpec.for_timestamp(plan.timestamp_after_last())),
                           nowhere)

    with progress.step("delete topic", ["admin"]):
        settle(admin.delete_topics([plan.topic], operation_timeout=args.timeout, request_timeout=args.timeout),
               "DeleteTopics")
        wait_until(lambda: plan.topic not in admin.list_topics(timeout=args.timeout).topics, args.timeout,
                   "the topic to disappear")


if __name__ == "__main__":
    main()
