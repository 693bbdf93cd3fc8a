"""The data path: Produce, Fetch, ListOffsets, DeleteRecords, OffsetForLeaderEpoch (writes and reads)."""

from __future__ import annotations

import uuid

from kafka_wire.record_codec import Record, build_batch, decode_batches

from ..scenario import ALL, T0, Session, scenario

UNKNOWN_ID = uuid.UUID("5eb5f6cd-0000-4000-8000-00000000dead")  # a topic id no broker has


def batch(values, *, timestamp: int = T0, headers=None, step: int = 0, **options) -> bytes:
    """One batch of `values` (keys k0, k1, ...), record i at timestamp + i * step."""
    return build_batch([Record(i, i * step, f"k{i}".encode(), v if isinstance(v, bytes) else v.encode(),
                               list(headers or []))
                        for i, v in enumerate(values)], base_timestamp=timestamp, **options)


def topic_id(s: Session, name: str):
    """The topic's id, recorded the first time a case asks: its placeholder is then numbered in the
    case's order, not in the order a broker happens to list topics in an answer."""
    known = s.__dict__.setdefault("_topic_ids", {})
    if name not in known:
        answer = s.call("Metadata", 12, {"topics": [{"name": name}], "allow_auto_topic_creation": False,
                                         "include_topic_authorized_operations": False}, record=False)
        known[name] = answer.topics[0].topic_id
        s.record(f"topic id of {name}", {"topic_id": known[name]})
    return known[name]


def named(s: Session, v: int, topic: str, by_id_from: int, known: bool = True) -> dict:
    """How a request names `topic` at version v: by name, or by id from `by_id_from` on."""
    if v >= by_id_from:
        return {"topic_id": topic_id(s, topic) if known else UNKNOWN_ID}
    return {"name": topic, "topic": topic}


def produce_body(s: Session, v: int, parts: dict, acks: int = -1, transactional_id=None) -> dict:
    """parts: {(topic, partition): batch bytes}; unknown topics (not created) are named by UNKNOWN_ID at v13+."""
    topics: dict[str, list] = {}
    for (topic, partition), records in parts.items():
        topics.setdefault(topic, []).append({"index": partition, "records": records})
    data = []
    for topic, partitions in topics.items():
        entry = named(s, v, topic, 13, known=not topic.endswith("-missing"))
        entry["partition_data"] = partitions
        data.append(entry)
    return {"transactional_id": transactional_id, "acks": acks, "timeout_ms": 10000, "topic_data": data}


def produce(s: Session, v: int, parts: dict, *, acks: int = -1, label: str | None = None, **kw):
    return s.call("Produce", v, produce_body(s, v, parts, acks), label=label, **kw)


def fetch_body(s: Session, v: int, topic: str, offset: int = 0, *, partition: int = 0, max_bytes: int = 1 << 20,
               partition_max_bytes: int = 1 << 20, isolation: int = 0, max_wait_ms: int = 50,
               current_leader_epoch: int = -1, replica_id: int = -1, session_id: int = 0, session_epoch: int = -1,
               known: bool = True) -> dict:
    entry = named(s, v, topic, 13, known=known)
    entry["partitions"] = [{"partition": partition, "current_leader_epoch": current_leader_epoch,
                            "fetch_offset": offset, "last_fetched_epoch": -1, "log_start_offset": -1,
                            "partition_max_bytes": partition_max_bytes}]
    return {"replica_id": replica_id, "replica_state": {"replica_id": replica_id, "replica_epoch": -1},
            "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": max_bytes, "isolation_level": isolation,
            "session_id": session_id, "session_epoch": session_epoch, "topics": [entry],
            "forgotten_topics_data": [], "rack_id": ""}


def fetch(s: Session, v: int, topic: str, offset: int = 0, *, label: str | None = None, record: bool = True, **kw):
    return s.call("Fetch", v, fetch_body(s, v, topic, offset, **kw), label=label, record=record, wait=1.0)


def list_offsets(s: Session, v: int, topic: str, timestamps, *, partition: int = 0, isolation: int = 0,
                 replica_id: int = -1, current_leader_epoch: int = -1, label: str | None = None):
    return s.call("ListOffsets", v, {"replica_id": replica_id, "isolation_level": isolation, "topics": [
        {"name": topic, "partitions": [{"partition_index": partition, "current_leader_epoch": current_leader_epoch,
                                        "timestamp": ts} for ts in timestamps]}]}, label=label)


def delete_records(s: Session, v: int, topic: str, offsets: dict, *, label: str | None = None, setup: bool = False):
    body = {"topics": [{"name": topic, "partitions": [{"partition_index": p, "offset": o}
                                                      for p, o in offsets.items()]}], "timeout_ms": 10000}
    if setup:
        return s.setup("DeleteRecords", v, body)
    return s.call("DeleteRecords", v, body, label=label)


# -- Produce ------------------------------------------------------------------------------------------


@scenario("Produce", versions=ALL)
def produce_acks(s: Session, v: int):
    """acks=-1 then acks=1: base offsets, log start offset, no record errors."""
    s.create_topic(s.topic())
    produce(s, v, {(s.topic(), 0): batch(["a", "b", "c"])}, acks=-1, label="acks=-1")
    produce(s, v, {(s.topic(), 0): batch(["d"])}, acks=1, label="acks=1")


@scenario("Produce", versions=ALL)
def produce_acks_zero(s: Session, v: int):
    """acks=0 gets no answer; the batch is appended and the connection answers the next request."""
    s.create_topic(s.topic())
    s.send("Produce", v, produce_body(s, v, {(s.topic(), 0): batch(["a", "b"])}, acks=0), conn="main")
    produce(s, v, {(s.topic(), 0): batch(["c"])}, acks=1, label="next request, acks=1")


@scenario("Produce", versions=ALL)
def produce_several_partitions(s: Session, v: int):
    """One request to three partitions of one topic and one of another."""
    s.create_topic(s.topic("a"), partitions=3)
    s.create_topic(s.topic("b"))
    produce(s, v, {(s.topic("a"), 0): batch(["a0"]), (s.topic("a"), 1): batch(["a1", "a1"]),
                   (s.topic("a"), 2): batch(["a2", "a2", "a2"]), (s.topic("b"), 0): batch(["b0"])})


@scenario("Produce", versions=ALL, covers=["UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_ID"])
def produce_unknown_topic_or_partition(s: Session, v: int):
    """A topic that does not exist (by name, or by id at v13+) and a partition past the topic's."""
    s.create_topic(s.topic())
    produce(s, v, {(s.topic("missing"), 0): batch(["a"])}, label="unknown topic")
    produce(s, v, {(s.topic(), 7): batch(["a"])}, label="unknown partition")
    produce(s, v, {(s.topic(), 0): batch(["a"]), (s.topic(), 3): batch(["b"])}, label="known and unknown partition")


@scenario("Produce", versions=ALL, covers=["INVALID_REQUIRED_ACKS"])
def produce_invalid_required_acks(s: Session, v: int):
    """acks=2 and acks=-2: only -1, 0 and 1 are valid."""
    s.create_topic(s.topic())
    produce(s, v, {(s.topic(), 0): batch(["a"])}, acks=2, label="acks=2")
    produce(s, v, {(s.topic(), 0): batch(["a"])}, acks=-2, label="acks=-2")
    produce(s, v, {(s.topic(), 0): batch(["a"])}, acks=1, label="then acks=1")


@scenario("Produce", versions=ALL, covers=["MESSAGE_TOO_LARGE"])
def produce_message_too_large(s: Session, v: int):
    """A batch larger than the topic's max.message.bytes (300 bytes)."""
    s.create_topic(s.topic(), configs={"max.message.bytes": "300"})
    produce(s, v, {(s.topic(), 0): batch(["x" * 400])}, label="too large")
    produce(s, v, {(s.topic(), 0): batch(["x" * 100])}, label="fits")


@scenario("Produce", versions=(3, 8, 13), covers=["RECORD_LIST_TOO_LARGE"], quick=False)
def produce_record_list_too_large(s: Session, v: int):
    """A batch larger than the topic's segment.bytes (Kafka's smallest: 1 MiB), below max.message.bytes."""
    s.create_topic(s.topic(), configs={"segment.bytes": "1048576", "max.message.bytes": "3000000"})
    produce(s, v, {(s.topic(), 0): batch(["x" * 1_200_000])}, label="larger than a segment")


@scenario("Produce", versions=ALL, covers=["CORRUPT_MESSAGE"])
def produce_corrupt_crc(s: Session, v: int):
    """A batch whose CRC does not match its bytes (one value byte flipped)."""
    s.create_topic(s.topic())
    good = bytearray(batch(["hello"]))
    good[-2] ^= 0x20
    produce(s, v, {(s.topic(), 0): bytes(good)}, label="corrupt CRC")
    produce(s, v, {(s.topic(), 0): batch(["hello"])}, label="intact")


@scenario("Produce", versions=(3, 7, 8, 13))
def produce_compressed(s: Session, v: int):
    """gzip, snappy, lz4 (and zstd from v7) batches: appended as sent, fetched back the same."""
    codecs = {1: "gzip", 2: "snappy", 3: "lz4"} | ({4: "zstd"} if v >= 7 else {})
    s.create_topic(s.topic())
    for codec, name in codecs.items():
        produce(s, v, {(s.topic(), 0): batch([f"{name}-{i}" * 20 for i in range(5)], compression=codec)},
                label=name)
    fetch(s, 12, s.topic(), 0, label="fetch all")


@scenario("Produce", versions=(3, 8, 13))
def produce_headers(s: Session, v: int):
    """Records with headers (one null-valued) fetched back with them."""
    s.create_topic(s.topic())
    produce(s, v, {(s.topic(), 0): batch(["a", "b"], headers=[("h1", b"v1"), ("h2", None), ("h1", b"again")])})
    fetch(s, 12, s.topic(), 0, label="fetch")


@scenario("Produce", versions=(3, 8, 13))
def produce_log_append_time(s: Session, v: int):
    """A LogAppendTime topic: the answer's log_append_time_ms is the batch's timestamp when fetched."""
    s.create_topic(s.topic(), configs={"message.timestamp.type": "LogAppendTime"})
    answer = produce(s, v, {(s.topic(), 0): batch(["a", "b"], step=5)})
    appended = answer.responses[0].partition_responses[0].log_append_time_ms
    fetched = fetch(s, 12, s.topic(), 0, record=False)

    header, records = list(decode_batches(bytes(fetched.responses[0].partitions[0].records)))[0]
    s.record("fetched batch", {"attributes": header.attributes,
                               "max_timestamp is the append time": header.max_timestamp == appended,
                               "base_timestamp is the append time": header.base_timestamp == appended,
                               "timestamp deltas": [r.timestamp_delta for r in records]})
    offsets = s.call("ListOffsets", 7, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": s.topic(), "partitions": [{"partition_index": 0, "timestamp": appended}]}]}, record=False)
    s.record("offset found by the append time", offsets.topics[0].partitions[0].offset)


@scenario("Produce", versions=ALL, covers=["INVALID_TIMESTAMP"])
def produce_invalid_timestamp(s: Session, v: int):
    """A topic accepting timestamps at most one hour old, and a batch from 2023; then one from now."""
    s.create_topic(s.topic(), configs={"message.timestamp.before.max.ms": "3600000"})
    produce(s, v, {(s.topic(), 0): batch(["old", "older"], timestamp=1_700_000_000_000)}, label="2023 timestamps")
    produce(s, v, {(s.topic(), 0): batch(["now"], timestamp=None)}, label="current timestamp")


# -- Fetch --------------------------------------------------------------------------------------------


def five_records(s: Session, topic: str | None = None, partition: int = 0) -> None:
    """Offsets 0-2 in one batch, 3-4 in another."""
    topic = topic or s.topic()
    s.produce(topic, partition, [(b"k0", b"a"), (b"k1", b"b"), (b"k2", b"c")])
    s.produce(topic, partition, [(b"k3", b"d"), (b"k4", b"e")], timestamp=T0 + 1000)


@scenario("Fetch", versions=ALL, covers=["OFFSET_OUT_OF_RANGE"])
def fetch_offsets(s: Session, v: int):
    """From 0, from the middle of a batch (the whole batch comes), at the log end (empty), past it, negative."""
    s.create_topic(s.topic())
    five_records(s)
    fetch(s, v, s.topic(), 0, label="from 0")
    fetch(s, v, s.topic(), 1, label="from the middle of the first batch")
    fetch(s, v, s.topic(), 4, label="last record")
    fetch(s, v, s.topic(), 5, label="at the log end")
    fetch(s, v, s.topic(), 9, label="past the log end")
    fetch(s, v, s.topic(), -1, label="negative offset")


@scenario("Fetch", versions=ALL, covers=["OFFSET_OUT_OF_RANGE"])
def fetch_before_log_start(s: Session, v: int):
    """After DeleteRecords up to 4: offsets before 4 are out of range, 4 is served (its whole batch)."""
    s.create_topic(s.topic())
    five_records(s)
    delete_records(s, 2, s.topic(), {0: 4}, setup=True)
    fetch(s, v, s.topic(), 0, label="before the log start")
    fetch(s, v, s.topic(), 4, label="at the log start")


@scenario("Fetch", versions=ALL, covers=["UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_ID"])
def fetch_unknown_topic_or_partition(s: Session, v: int):
    """A topic that does not exist (by name, or by id at v13+), and a partition past the topic's."""
    s.create_topic(s.topic())
    fetch(s, v, s.topic("missing"), 0, known=False, label="unknown topic")
    fetch(s, v, s.topic(), 0, partition=4, label="unknown partition")


@scenario("Fetch", versions=ALL)
def fetch_max_bytes_below_one_batch(s: Session, v: int):
    """max_bytes and partition_max_bytes smaller than the first batch: that whole batch comes (KIP-74)."""
    s.create_topic(s.topic())
    five_records(s)
    fetch(s, v, s.topic(), 0, max_bytes=10, label="max_bytes 10")
    fetch(s, v, s.topic(), 0, partition_max_bytes=10, label="partition_max_bytes 10")
    fetch(s, v, s.topic(), 0, max_bytes=100, partition_max_bytes=1 << 20, label="max_bytes 100 (two batches there)")


@scenario("Fetch", versions=ALL)
def fetch_isolation_levels(s: Session, v: int):
    """read_uncommitted and read_committed without transactions: the last stable offset is the high watermark."""
    s.create_topic(s.topic())
    five_records(s)
    fetch(s, v, s.topic(), 0, isolation=0, label="read_uncommitted")
    fetch(s, v, s.topic(), 0, isolation=1, label="read_committed")
    client = s.conn("isolation-2")
    s.raw(client.frame("Fetch", v, fetch_body(s, v, s.topic(), 0, isolation=2)), conn="isolation-2",
          label="isolation level 2", api="Fetch", version=v, wait=2.0)


@scenario("Fetch", versions=ALL, covers=["FETCH_SESSION_ID_NOT_FOUND", "INVALID_FETCH_SESSION_EPOCH"])
def fetch_sessions(s: Session, v: int):
    """Fetch sessions (v7+, KIP-227): an unknown id, a new session, a wrong epoch, the right one, closing it."""
    if v < 7:
        return
    s.create_topic(s.topic())
    five_records(s)
    fetch(s, v, s.topic(), 0, session_id=123456, session_epoch=1, label="unknown session id")
    fetch(s, v, s.topic(), 0, session_id=0, session_epoch=5, label="no id, epoch 5")
    created = fetch(s, v, s.topic(), 0, session_id=0, session_epoch=0, label="new session")
    session = created.session_id
    s.record("a session was created", session > 0)
    fetch(s, v, s.topic(), 5, session_id=session, session_epoch=7, label="wrong epoch")
    fetch(s, v, s.topic(), 5, session_id=session, session_epoch=1, label="epoch 1, new offset")
    body = fetch_body(s, v, s.topic(), 5, session_id=session, session_epoch=2)
    body["topics"] = []
    s.call("Fetch", v, body, label="epoch 2, nothing changed", wait=1.0)
    fetch(s, v, s.topic(), 5, session_id=session, session_epoch=-1, label="close the session")
    fetch(s, v, s.topic(), 5, session_id=session, session_epoch=3, label="closed session")


@scenario("Fetch", versions=ALL)
def fetch_session_incremental(s: Session, v: int):
    """A fetch session over two partitions (v7+, KIP-227): each epoch answers only what changed;
    forgotten partitions, a partition added back, the session emptied, a full fetch closing one."""
    if v < 7:
        return
    topic = s.topic()
    s.create_topic(topic, partitions=2)
    five_records(s)

    def partitions(*offsets):
        return [{"partition": p, "current_leader_epoch": -1, "fetch_offset": o, "last_fetched_epoch": -1,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20} for p, o in offsets]

    def session_fetch(session, epoch, label, parts=(), forget=()):
        body = fetch_body(s, v, topic, 0, session_id=session, session_epoch=epoch)
        body["topics"] = [{**body["topics"][0], "partitions": partitions(*parts)}] if parts else []
        if forget:
            body["forgotten_topics_data"] = [{**named(s, v, topic, 13), "partitions": list(forget)}]
        return s.call("Fetch", v, body, label=label, wait=1.0)

    session = session_fetch(0, 0, "new session, two partitions", parts=[(0, 0), (1, 0)]).session_id
    session_fetch(session, 1, "epoch 1, nothing named: partition 0 read again from 0")
    session_fetch(session, 2, "epoch 2, partition 0 at its end", parts=[(0, 5)])
    s.produce(topic, 1, [(b"k5", b"f")])
    session_fetch(session, 3, "epoch 3, a record in partition 1")
    session_fetch(session, 4, "epoch 4, partition 1 forgotten", forget=[1])
    s.produce(topic, 1, [(b"k6", b"g")])
    session_fetch(session, 5, "epoch 5, a record in the forgotten partition")
    session_fetch(session, 6, "epoch 6, partition 1 added back at 0", parts=[(1, 0)])
    session_fetch(session, 6, "epoch 6 again (a duplicate)")
    session_fetch(session, 7, "epoch 7, both forgotten: the session ends", forget=[0, 1])
    session_fetch(session, 8, "epoch 8 of the ended session")
    first = session_fetch(0, 0, "another new session", parts=[(0, 5)]).session_id
    second = session_fetch(first, 0, "a full fetch naming that session", parts=[(0, 5)]).session_id
    s.record("the full fetch made a new session", second not in (0, first))
    session_fetch(first, 1, "epoch 1 of the session the full fetch closed")
    session_fetch(second, 1, "epoch 1 of the new one")
    session_fetch(second, -1, "epoch -1 closes it", parts=[(0, 5)])
    session_fetch(second, 2, "epoch 2 of the closed one")


@scenario("Fetch", versions=ALL, covers=["INCONSISTENT_TOPIC_ID"])
def fetch_session_topic_recreated(s: Session, v: int):
    """A session by topic ids (v13+) whose topic is deleted, then re-created under its name: the
    session keeps the old id and the name it knew it by."""
    if v < 13:
        return
    topic = s.topic()
    s.create_topic(topic)
    five_records(s)
    session = fetch(s, v, topic, 5, session_id=0, session_epoch=0, label="new session").session_id
    s.setup("DeleteTopics", 6, {"topics": [{"name": topic, "topic_id": uuid.UUID(int=0)}], "timeout_ms": 30000})

    def listed() -> bool:
        answer = s.call("Metadata", 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False,
                                         "include_topic_authorized_operations": False}, record=False)
        return answer.topics[0].error_code == 0

    s.wait_until(lambda: not listed(), what=f"{topic} deleted")

    def incremental(epoch: int, label: str) -> None:
        body = fetch_body(s, v, topic, 5, session_id=session, session_epoch=epoch)
        body["topics"] = []
        s.call("Fetch", v, body, label=label, wait=1.0)

    incremental(1, "epoch 1, the topic deleted")
    s.create_topic(topic)
    incremental(2, "epoch 2, the topic re-created under its name")
    fetch(s, v, topic, 0, session_id=session, session_epoch=3, label="epoch 3, the old id named again")


@scenario("Fetch", versions=ALL, covers=["UNKNOWN_LEADER_EPOCH", "FENCED_LEADER_EPOCH"])
def fetch_current_leader_epoch(s: Session, v: int):
    """current_leader_epoch (v9+, KIP-320) at, above and below the leader's (epoch 0 on a new topic)."""
    s.create_topic(s.topic())
    five_records(s)
    for epoch, what in ((0, "the leader's"), (1, "newer"), (-5, "older (negative)"), (-1, "none")):
        fetch(s, v, s.topic(), 0, current_leader_epoch=epoch, label=f"epoch {epoch}: {what}")


@scenario("Fetch", versions=ALL, covers=["NOT_LEADER_OR_FOLLOWER"])
def fetch_replica_id_not_a_replica(s: Session, v: int):
    """A follower fetch (replica id 2) from a broker that is not one of the partition's replicas."""
    s.create_topic(s.topic())
    five_records(s)
    fetch(s, v, s.topic(), 0, replica_id=2, label="replica 2")


# -- ListOffsets --------------------------------------------------------------------------------------


def timestamped(s: Session) -> None:
    """Offsets 0-1 at T0, 2-3 at T0+1000 and +1010, 4 at T0+500 (the largest timestamp is offset 3)."""
    s.produce(s.topic(), 0, [(b"k0", b"a"), (b"k1", b"b")])
    s.setup("Produce", 8, produce_body(s, 8, {(s.topic(), 0): batch(["c", "d"], timestamp=T0 + 1000, step=10)}))
    s.produce(s.topic(), 0, [(b"k4", b"e")], timestamp=T0 + 500)


SPECIAL = ((-2, "earliest"), (-1, "latest"), (-3, "max timestamp"), (-4, "earliest local (KIP-405)"),
           (-5, "latest tiered (KIP-1005)"), (-6, "-6"), (-7, "-7"), (T0, "T0"), (T0 + 700, "T0+700"),
           (T0 + 5000, "past all records"), (0, "timestamp 0"))


@scenario("ListOffsets", versions=ALL)
def list_offsets_by_timestamp(s: Session, v: int):
    """Earliest, latest, max timestamp (-3), by timestamp, past all records; then after DeleteRecords up to 3."""
    s.create_topic(s.topic())
    timestamped(s)
    for ts, what in SPECIAL:
        list_offsets(s, v, s.topic(), [ts], label=what)
    delete_records(s, 2, s.topic(), {0: 3}, setup=True)
    for ts, what in SPECIAL:
        list_offsets(s, v, s.topic(), [ts], label=f"after DeleteRecords: {what}")


@scenario("ListOffsets", versions=ALL)
def list_offsets_empty_partition(s: Session, v: int):
    """A partition with no records."""
    s.create_topic(s.topic())
    for ts, what in SPECIAL:
        list_offsets(s, v, s.topic(), [ts], label=what)


@scenario("ListOffsets", versions=ALL, covers=["UNKNOWN_TOPIC_OR_PARTITION", "INVALID_REQUEST"])
def list_offsets_unknown(s: Session, v: int):
    """A topic that does not exist, a partition past the topic's, a partition named twice."""
    s.create_topic(s.topic())
    list_offsets(s, v, s.topic("missing"), [-1], label="unknown topic")
    list_offsets(s, v, s.topic(), [-1], partition=3, label="unknown partition")
    list_offsets(s, v, s.topic(), [-3], partition=3, label="unknown partition, max timestamp")
    list_offsets(s, v, s.topic(), [-7], partition=3, label="unknown partition, timestamp -7")
    s.call("ListOffsets", v, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": s.topic(), "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": ts}
                                           for ts in (-1, -2)]}]}, label="partition 0 twice")


@scenario("ListOffsets", versions=ALL)
def list_offsets_read_committed(s: Session, v: int):
    """isolation_level read_committed (v2+) without open transactions: latest is the high watermark."""
    s.create_topic(s.topic())
    timestamped(s)
    list_offsets(s, v, s.topic(), [-1], isolation=1, label="latest, read_committed")
    list_offsets(s, v, s.topic(), [-3], isolation=1, label="max timestamp, read_committed")


@scenario("ListOffsets", versions=ALL, covers=["UNKNOWN_LEADER_EPOCH", "FENCED_LEADER_EPOCH"])
def list_offsets_current_leader_epoch(s: Session, v: int):
    """current_leader_epoch (v4+) newer and older than the leader's; a replica id of a non-replica."""
    s.create_topic(s.topic())
    timestamped(s)
    list_offsets(s, v, s.topic(), [-1], current_leader_epoch=1, label="newer epoch")
    list_offsets(s, v, s.topic(), [-1], current_leader_epoch=-5, label="older epoch")
    list_offsets(s, v, s.topic(), [-1], replica_id=2, label="replica 2")
    list_offsets(s, v, s.topic(), [-1], replica_id=-2, label="debugging consumer (-2)")


# -- DeleteRecords ------------------------------------------------------------------------------------


@scenario("DeleteRecords", versions=ALL, covers=["OFFSET_OUT_OF_RANGE", "UNKNOWN_TOPIC_OR_PARTITION"])
def delete_records_offsets(s: Session, v: int):
    """Up to 2, then below that (no-op), past the high watermark, -1 (the high watermark), unknown ones."""
    s.create_topic(s.topic(), partitions=2)
    five_records(s)
    delete_records(s, v, s.topic(), {0: 2}, label="up to 2")
    delete_records(s, v, s.topic(), {0: 1}, label="up to 1 (below the log start)")
    delete_records(s, v, s.topic(), {0: 9}, label="past the high watermark")
    delete_records(s, v, s.topic(), {0: -1, 1: -1}, label="-1: the high watermark")
    delete_records(s, v, s.topic(), {0: -7}, label="-7")
    delete_records(s, v, s.topic(), {5: 0}, label="unknown partition")
    delete_records(s, v, s.topic("missing"), {0: 0}, label="unknown topic")
    list_offsets(s, 7, s.topic(), [-2], label="earliest afterwards")


# -- OffsetForLeaderEpoch -----------------------------------------------------------------------------


def offset_for_leader_epoch(s: Session, v: int, topic: str, epoch: int, *, partition: int = 0,
                            current_leader_epoch: int = -1, replica_id: int = -1, label: str):
    return s.call("OffsetForLeaderEpoch", v, {"replica_id": replica_id, "topics": [
        {"topic": topic, "partitions": [{"partition": partition, "current_leader_epoch": current_leader_epoch,
                                         "leader_epoch": epoch}]}]}, label=label)


@scenario("OffsetForLeaderEpoch", versions=ALL,
          covers=["UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_LEADER_EPOCH", "FENCED_LEADER_EPOCH"])
def offset_for_leader_epoch_epochs(s: Session, v: int):
    """Epochs below, at and above the leader's (0), current_leader_epoch checks, unknown partitions."""
    s.create_topic(s.topic())
    five_records(s)
    for epoch in (-1, 0, 1, 5):
        offset_for_leader_epoch(s, v, s.topic(), epoch, label=f"leader epoch {epoch}")
    offset_for_leader_epoch(s, v, s.topic(), 0, current_leader_epoch=0, label="current epoch 0")
    offset_for_leader_epoch(s, v, s.topic(), 0, current_leader_epoch=1, label="current epoch 1 (newer)")
    offset_for_leader_epoch(s, v, s.topic(), 0, current_leader_epoch=-5, label="current epoch -5 (older)")
    offset_for_leader_epoch(s, v, s.topic(), 0, partition=3, label="unknown partition")
    offset_for_leader_epoch(s, v, s.topic("missing"), 0, label="unknown topic")


@scenario("OffsetForLeaderEpoch", versions=ALL, covers=["NOT_LEADER_OR_FOLLOWER"])
def offset_for_leader_epoch_replica_ids(s: Session, v: int):
    """replica_id (v3+): a follower id that is not a replica, and the consumer's -1 and -2."""
    s.create_topic(s.topic())
    five_records(s)
    for replica in (2, -1, -2):
        offset_for_leader_epoch(s, v, s.topic(), 0, replica_id=replica, label=f"replica id {replica}")


# -- Produce: batches Kafka refuses -----------------------------------------------------------------------


def legacy_message_set(value: bytes, magic: int = 1) -> bytes:
    """One message of the old formats (magic 0/1, removed in Kafka 4.0 by KIP-724), at offset 0."""
    import struct
    import zlib

    body = struct.pack(">bb", magic, 0) + (struct.pack(">q", T0) if magic == 1 else b"") + \
        struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", 0, len(message)) + message


@scenario("Produce", versions=ALL, covers=["INVALID_RECORD", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"])
def produce_refused_batches(s: Session, v: int):
    """Control batches from a client (transactional or not), a transactional batch without a
    transactional id, old message formats (magic 0 and 1, removed in
    Kafka 4.0), a header counting more records than it holds, an empty records field."""
    import struct

    from crc32c import crc32c

    from kafka_wire.record_codec import ControlRecordType, encode_control_key, encode_end_transaction_marker

    s.create_topic(s.topic())
    key = (s.topic(), 0)

    def control(transactional: bool) -> bytes:
        return build_batch([Record(0, 0, encode_control_key(ControlRecordType.COMMIT), encode_end_transaction_marker(0))],
                           base_timestamp=T0, is_control=True, is_transactional=transactional,
                           producer_id=1, producer_epoch=0)

    produce(s, v, {key: control(True)}, label="transactional control batch, no transactional id")
    produce(s, v, {key: control(False)}, label="control batch, not transactional")
    produce(s, v, {key: legacy_message_set(b"old", magic=1)}, label="magic 1")
    produce(s, v, {key: legacy_message_set(b"older", magic=0)}, label="magic 0")
    miscounted = bytearray(batch(["a", "b"]))
    struct.pack_into(">i", miscounted, 57, 3)  # records_count
    struct.pack_into(">I", miscounted, 17, crc32c(bytes(miscounted[21:])))  # a valid CRC over the lie
    produce(s, v, {key: bytes(miscounted)}, label="records_count 3 for 2 records")
    produce(s, v, {key: b""}, label="empty records")
    produce(s, v, {key: batch(["fine"])}, label="then a good batch")
    # Last: kafka-wire appends it (known.py), which would shift every offset after it.
    produce(s, v, {key: batch(["t"], is_transactional=True, producer_id=1, producer_epoch=0, base_sequence=0)},
            label="transactional batch, no transactional id")


@scenario("Produce", versions=(3, 9, 13), quick=False)
def produce_null_records(s: Session, v: int):
    """A partition whose records field is null: Kafka 4.3 never answers (the client times out)."""
    s.create_topic(s.topic())
    client = s.conn("null-records")
    s.raw(client.frame("Produce", v, produce_body(s, v, {(s.topic(), 0): None}, acks=1)), conn="null-records",
          label="null records", api="Produce", version=v, wait=2.0)


@scenario("Produce", versions=ALL, covers=["UNSUPPORTED_COMPRESSION_TYPE"])
def produce_zstd_by_version(s: Session, v: int):
    """A zstd batch: Produce v7+ only (KIP-110); a topic with compression.type zstd recompresses an
    uncompressed batch."""
    s.create_topic(s.topic())
    s.create_topic(s.topic("zstd"), configs={"compression.type": "zstd"})
    produce(s, v, {(s.topic(), 0): batch(["z" * 50], compression=4)}, label="zstd batch")
    produce(s, v, {(s.topic("zstd"), 0): batch(["plain" * 10])}, label="plain batch to a zstd topic")


@scenario("Produce", versions=(3, 8, 13), covers=["INVALID_RECORD"])
def produce_compacted_without_key(s: Session, v: int):
    """A compacted topic refuses records without a key (record_errors name them at v8+)."""
    s.create_topic(s.topic(), configs={"cleanup.policy": "compact"})
    records = build_batch([Record(0, 0, b"k", b"a"), Record(1, 0, None, b"b"), Record(2, 0, None, b"c")],
                          base_timestamp=T0)
    produce(s, v, {(s.topic(), 0): records}, label="two records without key")
    produce(s, v, {(s.topic(), 0): batch(["keyed"])}, label="keyed")


@scenario("Produce", versions=(3, 9, 13))
def produce_topic_compression(s: Session, v: int):
    """A topic with compression.type gzip: an uncompressed batch is stored (and fetched) gzip; a
    compression.type producer topic keeps the producer's codec."""
    s.create_topic(s.topic("gzip"), configs={"compression.type": "gzip"})
    s.create_topic(s.topic("producer"), configs={"compression.type": "producer"})
    produce(s, v, {(s.topic("gzip"), 0): batch(["a" * 30, "b" * 30])}, label="plain to gzip topic")
    produce(s, v, {(s.topic("gzip"), 0): batch(["c" * 30], compression=3)}, label="lz4 to gzip topic")
    produce(s, v, {(s.topic("producer"), 0): batch(["d" * 30], compression=2)}, label="snappy to producer topic")
    for topic in ("gzip", "producer"):
        fetched = fetch(s, 12, s.topic(topic), 0, record=False)
        data = bytes(fetched.responses[0].partitions[0].records)
        s.record(f"{topic} topic's batches", [
            {"compression": header.attributes & 7, "base_offset": header.base_offset,
             "records": [(r.key, r.value) for r in records]} for header, records in decode_batches(data)])


# -- more shapes of requests ---------------------------------------------------------------------------


@scenario("Fetch", versions=ALL)
def fetch_several_partitions_max_bytes(s: Session, v: int):
    """Three partitions of two batches each: max_bytes across them (only the first non-empty partition may
    exceed it, KIP-74), partition_max_bytes 0, and one partition named twice."""
    s.create_topic(s.topic(), partitions=3)
    for p in range(3):
        five_records(s, partition=p)
    one_batch = len(batch(["a", "b", "c"]))

    def body(max_bytes: int, partition_max_bytes: int, partitions=(0, 1, 2)) -> dict:
        request = fetch_body(s, v, s.topic(), 0, max_bytes=max_bytes)
        request["topics"][0]["partitions"] = [
            {"partition": p, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
             "log_start_offset": -1, "partition_max_bytes": partition_max_bytes} for p in partitions]
        return request

    s.call("Fetch", v, body(one_batch + 20, 1 << 20), label="max_bytes a batch and a bit", wait=1.0)
    s.call("Fetch", v, body(1 << 20, 20), label="partition_max_bytes 20", wait=1.0)
    s.call("Fetch", v, body(1 << 20, 0), label="partition_max_bytes 0", wait=1.0)
    s.call("Fetch", v, body(1 << 20, 1 << 20, partitions=(1, 1)), label="partition 1 twice", wait=1.0)


@scenario("Produce", versions=(3, 8, 9, 13), covers=["INVALID_RECORD"])
def produce_batch_shapes(s: Session, v: int):
    """Two batches in one records field, a partition named twice, a batch whose base offset and leader
    epoch the client set (the broker assigns both)."""
    s.create_topic(s.topic())
    key = (s.topic(), 0)
    produce(s, v, {key: batch(["a"]) + batch(["b", "c"])}, label="two batches in one records field")
    s.create_topic(s.topic("twice"))
    body = produce_body(s, v, {(s.topic("twice"), 0): batch(["d"])})
    body["topic_data"][0]["partition_data"].append({"index": 0, "records": batch(["e", "f"])})
    s.call("Produce", v, body, label="partition 0 twice")
    produce(s, v, {key: batch(["g"], base_offset=1000, partition_leader_epoch=42)},
            label="base offset 1000, leader epoch 42")
    fetch(s, 12, s.topic(), 0, label="what the log holds")


@scenario("DeleteRecords", versions=ALL, covers=["POLICY_VIOLATION"])
def delete_records_compacted_topic(s: Session, v: int):
    """A compacted topic (cleanup.policy compact) refuses DeleteRecords; compact,delete accepts it."""
    s.create_topic(s.topic("compact"), configs={"cleanup.policy": "compact"})
    s.create_topic(s.topic("both"), configs={"cleanup.policy": "compact,delete"})
    for suffix in ("compact", "both"):
        s.produce(s.topic(suffix), 0, [(b"k0", b"a"), (b"k1", b"b")])
        delete_records(s, v, s.topic(suffix), {0: 1}, label=f"cleanup.policy {suffix}")
    s.call("DeleteRecords", v, {"topics": [{"name": s.topic("both"), "partitions": [
        {"partition_index": 0, "offset": 2}, {"partition_index": 0, "offset": 1}]}], "timeout_ms": 10000},
        label="partition named twice")


@scenario("OffsetForLeaderEpoch", versions=ALL)
def offset_for_leader_epoch_after_delete_records(s: Session, v: int):
    """The end offset of epoch 0 after DeleteRecords to the log end, and on an empty partition."""
    s.create_topic(s.topic(), partitions=2)
    five_records(s)
    delete_records(s, 2, s.topic(), {0: 5}, setup=True)
    s.call("OffsetForLeaderEpoch", v, {"replica_id": -1, "topics": [{"topic": s.topic(), "partitions": [
        {"partition": p, "current_leader_epoch": 0, "leader_epoch": 0} for p in (0, 1)]}]},
        label="epoch 0 of both partitions")
