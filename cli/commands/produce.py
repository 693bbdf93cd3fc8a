"""`kafka-wire produce`: kafka-console-producer over the wire. Each line of standard input becomes
one record; with a key separator, the text before it is the record's key.

    printf 'k1:hello\\nk2:world\\n' | kafka-wire produce --bootstrap-server localhost:9092 \\
        --topic orders --key-separator : --compression gzip

Keyed records go where Kafka's default partitioner puts them (murmur2 of the key); unkeyed ones
stick to one partition per batch, the next batch to the next partition. What standard input has
ready at once (a pipe's chunk, a terminal's line) is sent as one batch per partition, so a pipe
is sent in large batches and a terminal line by line.
"""

from __future__ import annotations

import itertools
import os
import sys
import time

from kafka_wire.compression import CompressionType
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch

from ..tool_support import ToolError, add_connection_arguments, connect, parse_key_values, reports_errors
from client import KafkaError, partition_for_key

CODECS = {"none": CompressionType.NONE, "gzip": CompressionType.GZIP, "snappy": CompressionType.SNAPPY,
          "lz4": CompressionType.LZ4, "zstd": CompressionType.ZSTD}
# Kafka's record overhead estimate is about this much per record; batches are cut before the
# broker's default message.max.bytes (1048588) with room to spare.
RECORD_OVERHEAD = 24
MAX_RETRIES = 5


def read_lines(fd: int):
    """Yield the lists of lines standard input has ready, one list per read: what arrived together
    is sent together. Lines end at \\n, \\r\\n or \\r, like Java's BufferedReader.readLine."""
    pending = b""
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            if pending:
                yield [pending]
            return
        data = pending + chunk
        lines = data.replace(b"\r\n", b"\n").split(b"\n")
        pending = lines.pop()
        if lines:
            yield [line.rstrip(b"\r") for line in lines]


class ConsoleProducer:
    """Sends records to a topic's partition leaders, one Produce request per leader per batch."""

    def __init__(self, cluster, topic: str, *, acks: int, compression: int, timeout_ms: int,
                 max_batch_bytes: int, partition: int | None) -> None:
        self.cluster = cluster
        self.topic = topic
        self.acks = acks
        self.compression = compression
        self.timeout_ms = timeout_ms
        self.max_batch_bytes = max_batch_bytes
        self.fixed_partition = partition
        self.leaders = self._leaders()
        self.sticky = itertools.cycle(sorted(self.leaders))
        self.sent = 0

    def _leaders(self) -> dict[int, int]:
        """partition -> leader; a producer's Metadata may create the topic (auto.create.topics.enable)."""
        deadline = time.monotonic() + self.cluster.timeout
        while True:
            response = self.cluster.metadata([self.topic], allow_auto_topic_creation=True)
            entry = next((t for t in response.topics if t.name == self.topic), None)
            error = ErrorCode.from_code(entry.error_code) if entry else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            leaders = {p.partition_index: p.leader_id for p in entry.partitions} if entry else {}
            if error == ErrorCode.NONE and leaders and all(n >= 0 for n in leaders.values()):
                return leaders
            if (error != ErrorCode.NONE and not error.retriable) or time.monotonic() >= deadline:
                raise KafkaError(error if error != ErrorCode.NONE else ErrorCode.LEADER_NOT_AVAILABLE,
                                 f"topic {self.topic}")
            time.sleep(0.1)

    def partition_of(self, key: bytes | None, unkeyed_partition: int) -> int:
        if self.fixed_partition is not None:
            return self.fixed_partition
        if key is None:
            return unkeyed_partition
        return partition_for_key(key, len(self.leaders))

    def send(self, records: list[tuple[bytes | None, bytes]]) -> None:
        """Send one chunk of (key, value) records and wait for the acks (unless acks=0)."""
        unkeyed = next(self.sticky)
        by_partition: dict[int, list[tuple[bytes | None, bytes]]] = {}
        for key, value in records:
            by_partition.setdefault(self.partition_of(key, unkeyed), []).append((key, value))
        for partition in by_partition:
            if partition not in self.leaders:
                raise ToolError(f"partition {partition} of {self.topic} does not exist")
        batches = {p: self._batches(recs) for p, recs in by_partition.items()}
        while any(batches.values()):
            # One batch per partition per request: Kafka takes one batch per partition in a Produce.
            round_ = {p: queue.pop(0) for p, queue in batches.items() if queue}
            self._produce_with_retries(round_)
        self.sent += len(records)

    def _batches(self, records) -> list[bytes]:
        batches, current, size = [], [], 0
        for key, value in records:
            record_size = len(value) + (len(key) if key else 0) + RECORD_OVERHEAD
            if current and size + record_size > self.max_batch_bytes:
                batches.append(self._batch(current))
                current, size = [], 0
            current.append((key, value))
            size += record_size
        if current:
            batches.append(self._batch(current))
        return batches

    def _batch(self, records) -> bytes:
        return build_batch([Record(i, 0, key, value) for i, (key, value) in enumerate(records)],
                           compression=self.compression)

    def _produce_with_retries(self, batches: dict[int, bytes]) -> None:
        for attempt in itertools.count():
            failed = self._produce(batches)
            if not failed:
                return
            error = next(iter(failed.values()))
            if not all(e.retriable for e in failed.values()) or attempt >= MAX_RETRIES:
                partition = next(iter(failed))
                raise KafkaError(error, f"produce to {self.topic}-{partition}")
            batches = {p: batches[p] for p in failed}
            time.sleep(0.1 * (attempt + 1))
            self.leaders = self._leaders()

    def _produce(self, batches: dict[int, bytes]) -> dict[int, ErrorCode]:
        """Send the batches to their leaders; the partitions that failed, with their errors."""
        by_leader: dict[int, dict[int, bytes]] = {}
        for partition, batch in batches.items():
            by_leader.setdefault(self.leaders[partition], {})[partition] = batch
        failed: dict[int, ErrorCode] = {}
        for leader, parts in by_leader.items():
            client = self.cluster.broker(leader)
            body = {"transactional_id": None, "acks": self.acks, "timeout_ms": self.timeout_ms,
                    "topic_data": [{"name": self.topic, "partition_data": [
                        {"index": p, "records": batch} for p, batch in parts.items()]}]}
            version = client.version_for("Produce", highest=12)  # v13 names topics by id, not by name
            response = client.call("Produce", version, body, expect_response=self.acks != 0)
            if response is None:
                continue
            for topic in response.responses:
                for result in topic.partition_responses:
                    if result.error_code:
                        failed[result.index] = ErrorCode.from_code(result.error_code)
        return failed


def parse_record(line: bytes, separator: bytes | None, line_number: int) -> tuple[bytes | None, bytes]:
    if separator is None:
        return None, line
    key, sep, value = line.partition(separator)
    if not sep:
        raise ToolError(f"No key separator found on line number {line_number}: '{line.decode(errors='replace')}'")
    return key, value


@reports_errors
def run(args) -> int:
    properties = parse_key_values(args.property, "property")
    separator_text = args.key_separator
    if properties.get("parse.key", "false").lower() == "true":
        separator_text = properties.get("key.separator", separator_text or "\t")
    separator = separator_text.encode() if separator_text is not None else None
    compression = CODECS[args.compression]
    line_number = 0
    with connect(args) as cluster:
        producer = ConsoleProducer(cluster, args.topic, acks=args.acks, compression=compression,
                                   timeout_ms=args.request_timeout_ms, max_batch_bytes=args.max_batch_bytes,
                                   partition=args.partition)
        for lines in read_lines(sys.stdin.fileno()):
            records = []
            for line in lines:
                line_number += 1
                records.append(parse_record(line, separator, line_number))
            producer.send(records)
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser("produce", help="send lines of standard input as records (kafka-console-producer)")
    add_connection_arguments(parser, ("--producer.config",))
    parser.add_argument("--topic", required=True)
    parser.add_argument("--key-separator", metavar="SEP",
                        help="each line is KEY<SEP>VALUE (as parse.key=true key.separator=SEP)")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="kafka-console-producer's reader properties: parse.key, key.separator")
    parser.add_argument("--compression", "--compression-codec", dest="compression", default="none",
                        choices=sorted(CODECS), help="batch compression (default none)")
    parser.add_argument("--acks", "--request-required-acks", dest="acks", type=int, default=-1, choices=(-1, 0, 1),
                        help="-1 (all in-sync replicas, the default), 1 (leader) or 0 (no answer)")
    parser.add_argument("--partition", type=int, help="send every record to this partition")
    parser.add_argument("--max-batch-bytes", type=int, default=512 * 1024,
                        help="cut batches at about this many bytes (default 524288)")
    parser.set_defaults(func=run)
