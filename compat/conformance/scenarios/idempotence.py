"""The idempotent producer: InitProducerId without a transactional id, sequences, epochs, DescribeProducers."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode

from ..scenario import ALL, Session, scenario
from .data_path import batch, produce

UNALLOCATED_PRODUCER_ID = 987_654_321  # no broker here hands out this id (Kafka: blocks of 1000 from 0)


def init_producer_id(s: Session) -> tuple[int, int]:
    """A new idempotent producer (not recorded). Kafka answers COORDINATOR_LOAD_IN_PROGRESS until its
    first block of producer ids has come from the controller: asked again until it has."""
    found = []

    def ready() -> bool:
        answer = s.setup("InitProducerId", 4, {"transactional_id": None, "transaction_timeout_ms": 60000,
                                               "producer_id": -1, "producer_epoch": -1},
                         ok=lambda a: a.error_code in (0, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
        found.append(answer)
        return answer.error_code == 0

    s.wait_until(ready, timeout=30, what="a producer id")
    return found[-1].producer_id, found[-1].producer_epoch


def idempotent(values, pid: int, epoch: int, sequence: int, **options) -> bytes:
    return batch(values, producer_id=pid, producer_epoch=epoch, base_sequence=sequence, **options)


@scenario("InitProducerId", versions=ALL)
def init_producer_id_idempotent(s: Session, v: int):
    """No transactional id: a new producer id each time; v3+ bumps the epoch of a given producer id."""
    init_producer_id(s)  # Kafka's first block of producer ids is there
    body = {"transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1}
    first = s.call("InitProducerId", v, body, label="first")
    s.call("InitProducerId", v, body, label="second")
    if v >= 3:
        again = dict(body, producer_id=first.producer_id, producer_epoch=first.producer_epoch)
        s.call("InitProducerId", v, again, label="the first's id and epoch")
        s.call("InitProducerId", v, dict(again, producer_epoch=first.producer_epoch + 5),
               label="the first's id, a future epoch")
        s.call("InitProducerId", v, dict(body, producer_id=UNALLOCATED_PRODUCER_ID, producer_epoch=0),
               label="an unallocated id")
        s.call("InitProducerId", v, dict(body, producer_id=first.producer_id), label="an id without epoch")


@scenario("Produce", versions=ALL, covers=["OUT_OF_ORDER_SEQUENCE_NUMBER"])
def produce_idempotent_sequences(s: Session, v: int):
    """Sequences in order, duplicates of the last and an older batch, a gap, then the next in order.

    Kafka 4.3 answers a duplicate of any of the last five batches NONE with the original base
    offset (never DUPLICATE_SEQUENCE_NUMBER), and a sequence inside the last batch OUT_OF_ORDER."""
    s.create_topic(s.topic())
    pid, epoch = init_producer_id(s)
    key = (s.topic(), 0)
    first = idempotent(["a", "b", "c"], pid, epoch, 0)
    second = idempotent(["d", "e"], pid, epoch, 3)
    produce(s, v, {key: first}, label="sequence 0")
    produce(s, v, {key: second}, label="sequence 3")
    produce(s, v, {key: second}, label="sequence 3 again (the last batch)")
    produce(s, v, {key: first}, label="sequence 0 again (an older batch)")
    produce(s, v, {key: idempotent(["x"], pid, epoch, 4)}, label="sequence 4 (inside the last batch)")
    produce(s, v, {key: idempotent(["x"], pid, epoch, 10)}, label="sequence 10 (a gap)")
    produce(s, v, {key: idempotent(["f"], pid, epoch, 5)}, label="sequence 5 (the next)")
    produce(s, v, {key: idempotent(["g"], pid, epoch, 6)}, acks=1, label="sequence 6, acks=1")


@scenario("Produce", versions=ALL, covers=["INVALID_PRODUCER_EPOCH", "OUT_OF_ORDER_SEQUENCE_NUMBER"])
def produce_idempotent_epochs(s: Session, v: int):
    """A newer epoch starting at sequence 0 (and one not at 0), then the old epoch again."""
    s.create_topic(s.topic())
    pid, epoch = init_producer_id(s)
    key = (s.topic(), 0)
    produce(s, v, {key: idempotent(["a"], pid, epoch, 0)}, label="epoch 0, sequence 0")
    produce(s, v, {key: idempotent(["b"], pid, epoch + 1, 3)}, label="epoch 1, sequence 3")
    produce(s, v, {key: idempotent(["c"], pid, epoch + 1, 0)}, label="epoch 1, sequence 0")
    produce(s, v, {key: idempotent(["d"], pid, epoch, 1)}, label="epoch 0 again, sequence 1")
    produce(s, v, {key: idempotent(["e"], pid, epoch + 1, 1)}, label="epoch 1, sequence 1")


@scenario("Produce", versions=ALL, covers=["OUT_OF_ORDER_SEQUENCE_NUMBER"])
def produce_idempotent_unknown_producer(s: Session, v: int):
    """A producer id the broker never handed out: at sequence 5, then at 0, then 1.

    Kafka 4.3 never answers UNKNOWN_PRODUCER_ID: a producer it has no state for starts at whatever
    sequence it sends (5 is appended), and the sequences after follow from there."""
    s.create_topic(s.topic())
    key = (s.topic(), 0)
    produce(s, v, {key: idempotent(["a"], UNALLOCATED_PRODUCER_ID, 0, 5)}, label="sequence 5")
    produce(s, v, {key: idempotent(["b"], UNALLOCATED_PRODUCER_ID, 0, 0)}, label="sequence 0")
    produce(s, v, {key: idempotent(["c"], UNALLOCATED_PRODUCER_ID, 0, 1)}, label="sequence 1")


@scenario("Produce", versions=(3, 8, 13))
def produce_idempotent_several_batches(s: Session, v: int):
    """Idempotent batches on two partitions in one request, then the same request again (duplicates)."""
    s.create_topic(s.topic(), partitions=2)
    pid, epoch = init_producer_id(s)
    parts = {(s.topic(), 0): idempotent(["a", "b"], pid, epoch, 0),
             (s.topic(), 1): idempotent(["c"], pid, epoch, 0)}
    produce(s, v, parts, label="two partitions")
    produce(s, v, parts, label="the same again")


@scenario("DescribeProducers", covers=["UNKNOWN_TOPIC_OR_PARTITION"])
def describe_producers_after_idempotent_writes(s: Session):
    """Two idempotent producers on partition 0, one on partition 1, none on 2; unknown ones."""
    s.create_topic(s.topic(), partitions=3)
    a, a_epoch = init_producer_id(s)
    b, b_epoch = init_producer_id(s)
    s.setup("Produce", 9, {"transactional_id": None, "acks": -1, "timeout_ms": 10000, "topic_data": [
        {"name": s.topic(), "partition_data": [{"index": 0, "records": idempotent(["a", "b"], a, a_epoch, 0)},
                                               {"index": 1, "records": idempotent(["c"], a, a_epoch, 0)}]}]})
    s.setup("Produce", 9, {"transactional_id": None, "acks": -1, "timeout_ms": 10000, "topic_data": [
        {"name": s.topic(), "partition_data": [{"index": 0, "records": idempotent(["d", "e", "f"], b, b_epoch, 0)}]}]})
    s.record("producer ids", {"a": {"producer_id": a}, "b": {"producer_id": b}})
    s.call("DescribeProducers", 0, {"topics": [{"name": s.topic(), "partition_indexes": [0, 1, 2, 7]},
                                               {"name": s.topic("missing"), "partition_indexes": [0]}]})
