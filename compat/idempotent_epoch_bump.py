"""librdkafka's idempotent producer writes a record twice when it bumps its epoch (issue 18).

The situation the fault harness met, made small and run the same against kafka-wire and the
reference Apache Kafka: one broker, a topic of two partitions, an idempotent acks=all producer
(confluent-kafka's librdkafka) connected through a TCP proxy.

1. One record to each partition, acknowledged: the broker knows the producer on both.
2. The proxy stops passing the broker's answers (requests still arrive and are written).
   Record A goes to partition 0; once the broker has it, record B goes to partition 1.
3. A reaches message.timeout.ms and is reported _MSG_TIMED_OUT. librdkafka's answer to a message
   timeout (rdkafka_broker.c, rd_kafka_toppar_producer_serve: "Message timeouts will lead to gaps
   in the message sequence ... Bump the epoch") is to drain and bump the producer epoch, then
   renumber every partition's queue from sequence 0 (rd_kafka_toppar_pid_change), B included,
   whose first send the broker already wrote.
4. The proxy passes answers again (after A's timeout is reported). B goes out again under the new
   epoch with sequence 0: for the broker a new record, so partition 1 holds B twice and B's
   delivery report says success.

The broker cannot tell that B's second copy is a retry: the producer id is the same but the epoch
is new and the sequence restarts at 0, which Kafka's ProducerStateManager accepts as the first
batch of the new epoch. So both brokers show the same duplicate; this is librdkafka's behaviour
(its issue #4953; a maintainer's comment there: duplicates on other partitions when messages time
out and the epoch is bumped), not the broker's.

--client java runs the same with Kafka's Java producer (kafka-clients of the reference Kafka,
tests/clients/java/EpochBumpProducer.java; answers pass again once A's delivery report is in):
it bumps the epoch too, but a batch already sent keeps its epoch and sequence, so B is written
once (reported ok, or TimeoutException when it expires first: an unknown outcome, not a copy).

Run: python -m compat.idempotent_epoch_bump [--against kafka-wire|4.3.0|3.9.1 ...] [--client java]
Prints, per broker, the records of each partition and whether B is there twice.
"""

from __future__ import annotations

import argparse
import contextlib
import select
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


class AnswerDroppingProxy:
    """A TCP proxy on 127.0.0.1 that forwards requests always and the broker's answers only while
    `answering` is set (otherwise they are read and discarded)."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.upstream: tuple[str, int] | None = None
        self.answering = threading.Event()
        self.answering.set()
        self.request_bytes = 0
        self.closed = threading.Event()
        self.client_closed = threading.Event()  # a client closed a connection (librdkafka does on a timeout)

    def start(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                broker = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                client.close()
                continue
            threading.Thread(target=self._pump, args=(client, broker), daemon=True).start()

    def _pump(self, client: socket.socket, broker: socket.socket) -> None:
        with client, broker:
            while not self.closed.is_set():
                readable, _, _ = select.select([client, broker], [], [], 0.5)
                for source in readable:
                    try:
                        data = source.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        if source is client:
                            self.client_closed.set()
                        return
                    if source is client:
                        self.request_bytes += len(data)
                        broker.sendall(data)
                    elif self.answering.is_set():
                        client.sendall(data)

    def close(self) -> None:
        self.closed.set()
        self.listener.close()


@contextlib.contextmanager
def running_target(against: str, proxy_port: int):
    """A broker whose advertised listener is the proxy: kafka-wire or the reference Kafka."""
    from testing.broker_process import free_port

    port = free_port()
    advertised = {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}"}
    if against == "kafka-wire":
        from testing.broker_process import running_broker

        with running_broker(port=port, config=advertised) as broker:
            yield ("127.0.0.1", port)
    else:
        from compat.reference_kafka import running_reference_kafka

        with running_reference_kafka(against, port=port, config=advertised):
            yield ("127.0.0.1", port)


def partition_values(bootstrap: str, topic: str, partitions: int, timeout: float = 60.0) -> dict[int, list[str]]:
    """Every record of the topic, by partition, read from the beginning to the high watermark."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4()}",
                         "enable.auto.commit": False})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)[1]
                for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        values: dict[int, list[str]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + timeout
        while any(len(values[p]) < ends[p] for p in values) and time.monotonic() < deadline:
            for message in consumer.consume(100, 1.0):
                if message.error() is None:
                    values[message.partition()].append(message.value().decode())
        return values
    finally:
        consumer.close()


def run(against: str, message_timeout_ms: int = 10000, verbose: bool = True, debug: str = "") -> dict:
    """The scenario of the module docstring against one broker. Returns what happened."""
    topic = f"epoch-bump-{uuid.uuid4().hex[:8]}"
    proxy = AnswerDroppingProxy()
    try:
        with running_target(against, proxy.port) as upstream:
            proxy.start(upstream)
            bootstrap = f"127.0.0.1:{proxy.port}"
            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(60)
            reports: dict[str, str] = {}

            def delivered(error, message):
                reports[message.value().decode()] = "ok" if error is None else error.name()

            producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                                 "linger.ms": 0, "message.timeout.ms": message_timeout_ms,
                                 "request.timeout.ms": 60000, "socket.timeout.ms": 60000,
                                 "retry.backoff.ms": 100, **({"debug": debug} if debug else {})})
            deadline = time.monotonic() + 60
            for partition, value in ((0, "first-0"), (1, "first-1")):
                producer.produce(topic, value=value.encode(), partition=partition, on_delivery=delivered)
            while len(reports) < 2 and time.monotonic() < deadline:
                producer.poll(0.2)
            if reports != {"first-0": "ok", "first-1": "ok"}:
                raise RuntimeError(f"the first records were not acknowledged: {reports}")

            proxy.answering.clear()
            sent = proxy.request_bytes
            producer.produce(topic, value=b"A", partition=0, on_delivery=delivered)
            while proxy.request_bytes == sent and time.monotonic() < deadline:
                producer.poll(0.1)
            # A's Produce request has reached the broker; B goes half a message timeout later, so
            # that it is still young when A times out.
            until = time.monotonic() + message_timeout_ms / 2000
            while time.monotonic() < until:
                producer.poll(0.1)
            sent = proxy.request_bytes
            producer.produce(topic, value=b"B", partition=1, on_delivery=delivered)
            while proxy.request_bytes == sent and time.monotonic() < deadline:
                producer.poll(0.1)
            # A's request times out with A (the request's timeout is its first message's), librdkafka
            # closes the connection, B's request fails with it; answers pass from then on.
            proxy.client_closed.clear()
            deadline = time.monotonic() + 120
            while not proxy.client_closed.is_set() and time.monotonic() < deadline:
                producer.poll(0.1)
            proxy.answering.set()
            while "B" not in reports and time.monotonic() < deadline:
                producer.poll(0.1)
            producer.flush(30)
            values = partition_values(bootstrap, topic, 2)
    finally:
        proxy.close()
    outcome = {"against": against, "reports": reports, "values": values,
               "B in partition 1": values[1].count("B"), "A in partition 0": values[0].count("A")}
    if verbose:
        print(f"{against}: delivery reports {reports}; partition 0 {values[0]}; partition 1 {values[1]}"
              f" -> B written {outcome['B in partition 1']} time(s)")
    return outcome


JAVA_PROGRAM = Path(__file__).resolve().parent.parent / "tests" / "clients" / "java" / "EpochBumpProducer.java"


class JavaProducer:
    """tests/clients/java/EpochBumpProducer.java (Kafka's own Java client, kafka-clients of the
    reference Kafka's libs) driven over stdin; its delivery reports collected by a thread."""

    def __init__(self, bootstrap: str, topic: str, delivery_timeout_ms: int, request_timeout_ms: int,
                 version: str = "4.3.0") -> None:
        from compat.reference_kafka import install, java

        classpath = str(install(version) / "*")
        self.process = subprocess.Popen(
            [java(), "-cp", classpath, str(JAVA_PROGRAM), bootstrap, topic, str(delivery_timeout_ms),
             str(request_timeout_ms)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.reports: dict[str, str] = {}
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip())
            words = line.split()
            if len(words) == 3 and words[0] == "REPORT":
                self.reports[words[1]] = words[2]

    def command(self, text: str) -> None:
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.command("close")
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()


def run_java(against: str, delivery_timeout_ms: int = 15000, request_timeout_ms: int = 15000,
             verbose: bool = True) -> dict:
    """The same with the Java producer: A is sent, B half a delivery timeout later; the broker's
    answers pass again once A's delivery report (its expiry) is in."""
    topic = f"epoch-bump-{uuid.uuid4().hex[:8]}"
    proxy = AnswerDroppingProxy()
    producer = None
    try:
        with running_target(against, proxy.port) as upstream:
            proxy.start(upstream)
            bootstrap = f"127.0.0.1:{proxy.port}"
            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(60)
            producer = JavaProducer(bootstrap, topic, delivery_timeout_ms, request_timeout_ms)
            reports = producer.reports
            deadline = time.monotonic() + 120
            producer.command("send 0 first-0")
            producer.command("send 1 first-1")
            while len(reports) < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            if reports != {"first-0": "ok", "first-1": "ok"}:
                raise RuntimeError(f"the first records were not acknowledged: {reports} {producer.lines}")
            proxy.answering.clear()
            sent = proxy.request_bytes
            producer.command("send 0 A")
            while proxy.request_bytes == sent and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(delivery_timeout_ms / 2000)
            producer.command("send 1 B")
            while "A" not in reports and time.monotonic() < deadline:
                time.sleep(0.05)
            proxy.answering.set()
            while "B" not in reports and time.monotonic() < deadline:
                time.sleep(0.1)
            producer.command("flush")
            while "FLUSHED" not in producer.lines and time.monotonic() < deadline:
                time.sleep(0.1)
            producer.close()
            values = partition_values(bootstrap, topic, 2)
    finally:
        if producer is not None and producer.process.poll() is None:
            producer.process.kill()
        proxy.close()
    outcome = {"against": against, "client": "java", "reports": dict(reports), "values": values,
               "B in partition 1": values[1].count("B"), "A in partition 0": values[0].count("A")}
    if verbose:
        print(f"{against} (Java producer): delivery reports {reports}; partition 0 {values[0]}; "
              f"partition 1 {values[1]} -> B written {outcome['B in partition 1']} time(s)")
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="compat.idempotent_epoch_bump", description=__doc__.splitlines()[0])
    parser.add_argument("--against", action="append", default=None,
                        help="kafka-wire or a reference Kafka version (4.3.0, 3.9.1); repeatable")
    parser.add_argument("--debug", default="", help="librdkafka debug contexts of the producer, e.g. eos,msg")
    parser.add_argument("--client", choices=["librdkafka", "java"], default="librdkafka")
    args = parser.parse_args(argv)
    for against in args.against or ["kafka-wire", "4.3.0"]:
        if args.client == "java":
            run_java(against)
        else:
            run(against, debug=args.debug)
    return 0


if __name__ == "__main__":
    sys.exit(main())
