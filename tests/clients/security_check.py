"""A Python client logs in (SASL and/or TLS), produces and reads back a few records; or, with
--expect-refusal, checks that the broker refuses the login.

Usage: python security_check.py CLIENT HOST:PORT --topic T [--protocol SASL_SSL] [--mechanism SCRAM-SHA-256]
           [--user U --password P] [--ca ca.pem] [--cert c.pem --key k.pem] [--expect-refusal] [--timeout S]
CLIENT is kafka-python, aiokafka or confluent-kafka. Prints ALL CHECKS PASSED (or REFUSED AS EXPECTED)
and exits 0; exits 1 with the reason otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time

RECORDS = [(b"k%d" % i, b"secured value %d" % i) for i in range(5)]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("client", choices=["kafka-python", "aiokafka", "confluent-kafka"])
    parser.add_argument("bootstrap")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--protocol", default="SASL_SSL")
    parser.add_argument("--mechanism", default="SCRAM-SHA-256")
    parser.add_argument("--user")
    parser.add_argument("--password")
    parser.add_argument("--ca")
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--expect-refusal", action="store_true")
    parser.add_argument("--timeout", type=float, default=30)
    return parser.parse_args()


def uses_sasl(args) -> bool:
    return args.protocol.startswith("SASL")


def uses_tls(args) -> bool:
    return args.protocol.endswith("SSL")


# -- kafka-python -----------------------------------------------------------------------------------


def kafka_python(args) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    common = {"bootstrap_servers": args.bootstrap, "security_protocol": args.protocol,
              "request_timeout_ms": int(args.timeout * 1000)}
    if uses_sasl(args):
        common.update(sasl_mechanism=args.mechanism, sasl_plain_username=args.user, sasl_plain_password=args.password)
    if uses_tls(args):
        common.update(ssl_cafile=args.ca, ssl_certfile=args.cert, ssl_keyfile=args.key, ssl_check_hostname=True)
    if args.expect_refusal:
        producer = KafkaProducer(**common, max_block_ms=int(args.timeout * 1000),
                                 bootstrap_timeout_ms=int(args.timeout * 1000))
        try:
            producer.send(args.topic, b"never").get(timeout=args.timeout)
        finally:
            producer.close(timeout=1)
        raise AssertionError("the broker accepted the login")
    producer = KafkaProducer(**common, acks="all")
    for key, value in RECORDS:
        producer.send(args.topic, key=key, value=value, partition=0)
    producer.flush(timeout=args.timeout)
    producer.close()
    consumer = KafkaConsumer(**common, enable_auto_commit=False, consumer_timeout_ms=int(args.timeout * 1000))
    tp = TopicPartition(args.topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got = []
    for message in consumer:
        got.append((message.key, message.value))
        if len(got) >= len(RECORDS):
            break
    consumer.close()
    check_records(got)


# -- aiokafka ------------------------------------------------------------------------------------------


def aiokafka(args) -> None:
    asyncio.run(_aiokafka(args))


async def _aiokafka(args) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.helpers import create_ssl_context

    common = {"bootstrap_servers": args.bootstrap, "security_protocol": args.protocol,
              "request_timeout_ms": int(args.timeout * 1000)}
    if uses_sasl(args):
        common.update(sasl_mechanism=args.mechanism, sasl_plain_username=args.user, sasl_plain_password=args.password)
    if uses_tls(args):
        common["ssl_context"] = create_ssl_context(cafile=args.ca, certfile=args.cert, keyfile=args.key)
    producer = AIOKafkaProducer(**common, acks="all")
    if args.expect_refusal:
        try:
            await asyncio.wait_for(producer.start(), args.timeout)
        finally:
            await producer.stop()
        raise AssertionError("the broker accepted the login")
    await producer.start()
    try:
        for key, value in RECORDS:
            await producer.send_and_wait(args.topic, key=key, value=value, partition=0)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(**common, enable_auto_commit=False)
    await consumer.start()
    got = []
    try:
        tp = TopicPartition(args.topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        deadline = time.monotonic() + args.timeout
        while len(got) < len(RECORDS) and time.monotonic() < deadline:
            batch = await consumer.getmany(tp, timeout_ms=1000)
            got += [(m.key, m.value) for m in batch.get(tp, [])]
    finally:
        await consumer.stop()
    check_records(got)


# -- confluent-kafka ---------------------------------------------------------------------------------------


def confluent(args) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

    errors = []
    common = {"bootstrap.servers": args.bootstrap, "security.protocol": args.protocol,
              "socket.timeout.ms": int(args.timeout * 1000), "error_cb": errors.append}
    if uses_sasl(args):
        common.update({"sasl.mechanism": args.mechanism, "sasl.username": args.user, "sasl.password": args.password})
    if uses_tls(args):
        common["ssl.ca.location"] = args.ca
        if args.cert:
            common.update({"ssl.certificate.location": args.cert, "ssl.key.location": args.key})
    producer = Producer(common)
    if args.expect_refusal:
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline and not errors:
            try:
                producer.list_topics(timeout=1)
                raise AssertionError("the broker accepted the login")
            except KafkaException:
                pass
            producer.poll(0.1)
        if not errors:
            raise AssertionError("no error reported before the timeout")
        raise RefusedAsExpected(str(errors[0]))
    delivered = []
    for key, value in RECORDS:
        producer.produce(args.topic, key=key, value=value, partition=0,
                         on_delivery=lambda err, msg: delivered.append(err))
    producer.flush(args.timeout)
    if len(delivered) != len(RECORDS) or any(delivered):
        raise AssertionError(f"delivery reports {delivered}, errors {errors}")
    consumer = Consumer({**common, "group.id": "security-check", "enable.auto.commit": False})
    consumer.assign([TopicPartition(args.topic, 0, OFFSET_BEGINNING)])
    got = []
    deadline = time.monotonic() + args.timeout
    while len(got) < len(RECORDS) and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and not message.error():
            got.append((message.key(), message.value()))
    consumer.close()
    check_records(got)


class RefusedAsExpected(Exception):
    pass


class ClientLog(logging.Handler):
    """What the client logged: kafka-python reports a refused login in its log and then only
    times out, so the refusal's reason is found here."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record) -> None:
        self.lines.append(f"{record.name}: {record.getMessage()}")


CLIENT_LOG = ClientLog()


def check_records(got) -> None:
    if got != RECORDS:
        raise AssertionError(f"read back {got}, expected {RECORDS}")


def main() -> int:
    args = parse_args()
    logging.getLogger().addHandler(CLIENT_LOG)
    run = {"kafka-python": kafka_python, "aiokafka": aiokafka, "confluent-kafka": confluent}[args.client]
    try:
        run(args)
    except RefusedAsExpected as refused:
        print(f"REFUSED AS EXPECTED: {refused}")
        return 0
    except AssertionError as failure:
        print(f"FAILED: {failure}")
        return 1
    except Exception as error:  # the clients' own exception types
        if args.expect_refusal:
            print(f"REFUSED AS EXPECTED: {type(error).__name__}: {error}")
            auth_lines = [line for line in CLIENT_LOG.lines if "uthentication" in line or "SASL" in line]
            if auth_lines:
                print(f"client log: {auth_lines[0]}")
            return 0
        print(f"FAILED: {type(error).__name__}: {error}")
        return 1
    if args.expect_refusal:
        print("FAILED: the login succeeded")
        return 1
    print("ALL CHECKS PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
