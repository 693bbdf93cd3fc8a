"""aiokafka runs the client acceptance sequence (see acceptance.py) against a broker.

Usage: python aiokafka_check.py HOST:PORT [--records N] [--codecs none,gzip,...]
Exit status 0 when every check passed; 1 with the reason otherwise.
"""

from __future__ import annotations

import asyncio
import time

from acceptance import AcceptancePlan, CheckFailed, ReceivedRecord, argument_parser, run_program
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

CLIENT = "aiokafka"


def main() -> None:
    args = argument_parser(__doc__.splitlines()[0]).parse_args()
    run_program(CLIENT, lambda progress: asyncio.run(check(progress, args)))


def error_codes(answer) -> list[tuple[str, int]]:
    """Every non-zero error code in an admin response (aiokafka returns them, it does not raise)."""
    found = []

    def walk(node, where):
        if isinstance(node, dict):
            code = node.get("error_code")
            if code:
                found.append((where, code))
            for key, value in node.items():
                walk(value, node.get("name") or node.get("topic") or where)
        elif isinstance(node, (list, tuple)):
            for item in node:
                walk(item, where)

    walk(answer.to_object(), "")
    return found


async def wait_until(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        result = await condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise CheckFailed(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(0.2)


async def check(progress, args) -> None:
    plan = AcceptancePlan(CLIENT, args.codecs.split(","), records_per_codec=args.records)
    timeout_ms = int(args.timeout * 1000)
    common = {"bootstrap_servers": args.bootstrap, "client_id": "kafka-wire-check", "request_timeout_ms": timeout_ms}
    partitions = [TopicPartition(plan.topic, p) for p in range(plan.partitions)]
    progress.say(f"topic {plan.topic}, {plan.total} records, codecs {','.join(plan.codecs)}")

    admin = AIOKafkaAdminClient(**common)
    with progress.step("connect admin client", ["metadata"]):
        await asyncio.wait_for(admin.start(), args.timeout)

    with progress.step(f"create topic ({plan.partitions} partitions)", ["admin"]):
        answer = await admin.create_topics([NewTopic(plan.topic, plan.partitions, 1)], timeout_ms=timeout_ms)
        if errors := error_codes(answer):
            raise CheckFailed(f"CreateTopics answered errors {errors}")

    with progress.step("describe topic", ["metadata"]):
        async def described():
            topics = await admin.describe_topics([plan.topic])
            return [t for t in topics if t["topic"] == plan.topic and t["error_code"] == 0
                    and len(t["partitions"]) == plan.partitions
                    and all(p["leader"] >= 0 for p in t["partitions"])]
        await wait_until(described, args.timeout, "the topic to have a leader for every partition")

    for codec in plan.codecs:
        with progress.step(f"produce {len(plan.for_codec(codec))} records, compression {codec}",
                           [f"produce:{codec}"]):
            producer = AIOKafkaProducer(**common, compression_type=None if codec == "none" else codec, linger_ms=5)
            await asyncio.wait_for(producer.start(), args.timeout)
            try:
                records = plan.for_codec(codec)
                futures = [
                    await producer.send(plan.topic, value=record.value, key=record.key, partition=record.partition,
                                        timestamp_ms=record.timestamp, headers=list(record.headers))
                    for record in records
                ]
                acks = await asyncio.wait_for(asyncio.gather(*futures), args.timeout)
                for record, metadata in zip(records, acks):
                    plan.check_delivery(record, metadata.partition, metadata.offset)
            finally:
                await producer.stop()

    consumer = AIOKafkaConsumer(**common, group_id=None, enable_auto_commit=False)
    await asyncio.wait_for(consumer.start(), args.timeout)
    with progress.check("read back everything (assign + seek_to_beginning, no group)", ["fetch"]):
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        received: list[ReceivedRecord] = []
        deadline = time.monotonic() + args.timeout
        while len(received) < plan.total and time.monotonic() < deadline:
            for tp, records in (await consumer.getmany(timeout_ms=500)).items():
                received.extend(
                    ReceivedRecord(tp.partition, r.offset, r.key, r.value, tuple(r.headers), r.timestamp)
                    for r in records)
        progress.say(f"read {len(received)} of {plan.total} records")
        plan.check_received(received)

    target, at_target = plan.timestamp_probe()
    nowhere = {p: -1 for p in range(plan.partitions)}

    def found_offsets(offsets):  # offsets_for_times: None where no record is that late
        return {tp.partition: (-1 if found is None else found.offset) for tp, found in offsets.items()}

    with progress.check("consumer.beginning_offsets", ["list-offsets"]):
        got = await consumer.beginning_offsets(partitions)
        plan.check_offsets("beginning_offsets", {tp.partition: o for tp, o in got.items()},
                           {p: 0 for p in range(plan.partitions)})
    with progress.check("consumer.end_offsets", ["list-offsets"]):
        got = await consumer.end_offsets(partitions)
        plan.check_offsets("end_offsets", {tp.partition: o for tp, o in got.items()}, plan.log_end_offsets)
    with progress.check("consumer.offsets_for_times", ["list-offsets"]):
        got = found_offsets(await consumer.offsets_for_times({tp: target for tp in partitions}))
        plan.check_offsets(f"offsets_for_times({target})", got, at_target)
        got = found_offsets(await consumer.offsets_for_times({tp: plan.timestamp_after_last() for tp in partitions}))
        plan.check_offsets("offsets_for_times(after the last record)", got, nowhere)
    await consumer.stop()

    with progress.step("delete topic", ["admin"]):
        answer = await admin.delete_topics([plan.topic], timeout_ms=timeout_ms)
        if errors := error_codes(answer):
            raise CheckFailed(f"DeleteTopics answered errors {errors}")

        async def gone():
            return plan.topic not in await admin.list_topics()
        await wait_until(gone, args.timeout, "the topic to disappear")
    await admin.close()


if __name__ == "__main__":
    main()
