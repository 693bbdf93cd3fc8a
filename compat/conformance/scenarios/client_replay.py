"""The requests real clients send, replayed against both brokers (issue 26, item 5).

One scenario per entry of compat/conformance/captured/requests.json (written by `kafka-wire compat
capture`, compat/conformance/capture.py): the request a client sent, at the version it chose, with the
run-specific values put back from the case's own names. Before playing it the case creates the topics
it names (unless the request is a CreateTopics) with the partitions the corpus saw, and waits for the
coordinator of the group or transactional id it names, so what is compared is the answer to the request
itself. Values that belonged to the capturing run's session are replaced by ones that stand alone:
a member id by one neither broker issued (both answer as to an unknown member), a fetch session by a
sessionless full fetch (session 0, epoch -1), a topic id by the id the replaying broker gave the topic.

An idempotent producer's Produce is played after an InitProducerId of the case's own, its batches
carrying that producer id and epoch from sequence 0. Entries the capture marked `skip` are not played; SKIPPED lists them with the reason. All are full-run
only (quick=False): about 140 cases, each creating its topics on both brokers.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

from ..scenario import Session, plain, scenario

CORPUS = Path(__file__).resolve().parent.parent / "captured" / "requests.json"
UNKNOWN_MEMBER = "replay-member-neither-broker-issued"
UNKNOWN_TOPIC_ID = uuid.UUID("5e1ec7ed-0000-4000-8000-00000000c0de")
PLACEHOLDER = re.compile(r"^\$\{(topic|topic_id|group|txn):(\d+)\}$")
GROUP_APIS = {"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch", "DescribeGroups",
              "DeleteGroups", "OffsetDelete", "ConsumerGroupHeartbeat", "ConsumerGroupDescribe", "TxnOffsetCommit"}

RETRIABLE = (14, 15)  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE
RETRIES = 50

SKIPPED: list[tuple[str, str]] = []  # (what, why) for the entries not played


def _placeholders(value, found: set) -> set:
    if isinstance(value, dict):
        for v in value.values():
            _placeholders(v, found)
    elif isinstance(value, list):
        for v in value:
            _placeholders(v, found)
    elif isinstance(value, str) and (match := PLACEHOLDER.match(value)):
        found.add((match.group(1), int(match.group(2))))
    return found


def _topic_id(s: Session, name: str) -> uuid.UUID:
    answer = s.call("Metadata", 12, {"topics": [{"name": name, "topic_id": uuid.UUID(int=0)}],
                                     "allow_auto_topic_creation": False,
                                     "include_topic_authorized_operations": False}, record=False)
    return answer.topics[0].topic_id


def _concrete(s: Session, value, ids: dict[str, uuid.UUID]):
    """The captured body with this case's names and standalone values put in."""
    if isinstance(value, dict):
        if set(value) == {"bytes"}:
            return bytes.fromhex(value["bytes"])
        out = {}
        for k, v in value.items():
            if v == "${session}":
                out[k] = 0 if k == "session_id" else -1
            else:
                out[k] = _concrete(s, v, ids)
        return out
    if isinstance(value, list):
        return [_concrete(s, v, ids) for v in value]
    if isinstance(value, str):
        if value == "${member}":
            return UNKNOWN_MEMBER
        if value == "${uuid:zero}":
            return uuid.UUID(int=0)
        if value == "${uuid:unknown}":
            return UNKNOWN_TOPIC_ID
        match = PLACEHOLDER.match(value)
        if match:
            kind, number = match.group(1), match.group(2)
            if kind == "topic":
                return s.topic(number)
            if kind == "topic_id":
                return ids[number]
            if kind == "group":
                return s.group(number)
            return s.transactional_id(number)
    return value


def _as_new_producer(s: Session, request: dict) -> None:
    """An idempotent producer's Produce, as the first batches of a producer id this broker issued: the
    capture's producer id, epoch and sequence replaced (sequence 0), the batch's CRC-32C recomputed."""
    from kafka_wire.records import crc32c

    for _ in range(RETRIES):
        answer = s.call("InitProducerId", 4, {"transactional_id": None, "transaction_timeout_ms": 60000,
                                              "producer_id": -1, "producer_epoch": -1}, record=False)
        if answer is not None and answer.error_code not in RETRIABLE:
            break
        time.sleep(0.2)
    if answer is None or answer.error_code != 0:
        from ..scenario import CaseFailed
        raise CaseFailed(f"set-up InitProducerId: {answer and answer.error_code}")
    for topic in request["topic_data"]:
        for partition in topic["partition_data"]:
            batch = bytearray(partition["records"])
            batch[43:51] = answer.producer_id.to_bytes(8, "big", signed=True)
            batch[51:53] = answer.producer_epoch.to_bytes(2, "big", signed=True)
            batch[53:57] = (0).to_bytes(4, "big", signed=True)
            batch[17:21] = crc32c(bytes(batch[21:])).to_bytes(4, "big")
            partition["records"] = bytes(batch)


def _replay(entry: dict, partitions: dict[str, int]):
    api, body = entry["api"], entry["body"]

    def play(s: Session, v: int):
        needed = _placeholders(body, set())
        topics = sorted({n for kind, n in needed if kind in ("topic", "topic_id")})
        if api != "CreateTopics":
            for n in topics:
                s.create_topic(s.topic(str(n)), partitions.get(f"${{topic:{n}}}", 1))
        ids = {str(n): _topic_id(s, s.topic(str(n))) for kind, n in needed if kind == "topic_id"}
        if api in GROUP_APIS:
            for kind, n in needed:
                if kind == "group":
                    s.find_coordinator(s.group(str(n)))
        for kind, n in needed:
            if kind == "txn":
                s.find_coordinator(s.transactional_id(str(n)), key_type=1)
        request = _concrete(s, body, ids)
        if entry.get("idempotent"):
            _as_new_producer(s, request)
        wait = None
        if api == "Fetch":
            wait = request.get("max_wait_ms", 0) / 1000
        elif api == "JoinGroup":
            wait = 10.0  # a first join waits out the group's initial rebalance delay (3 s on both)
        label = f"{entry['client']} {api} v{v}"
        for _ in range(RETRIES):
            answer = s.call(api, v, request, label=label, wait=wait, record=False)
            # A retriable error of a fresh coordinator or producer id block: the client retries too.
            if answer is None or getattr(answer, "error_code", 0) not in RETRIABLE:
                break
            time.sleep(0.2)
        # Recorded as s.call records it (the API named, so normalise.py's per-API rules apply).
        s._record(label, api, v, plain(answer) if answer is not None else {"connection": "closed"})

    return play


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _register() -> None:
    if not CORPUS.is_file():
        return
    corpus = json.loads(CORPUS.read_text())
    partitions = corpus.get("topics", {})
    numbers: dict[tuple, int] = {}
    for entry in corpus["entries"]:
        key = (entry["client"], entry["api"], entry["version"])
        numbers[key] = numbers.get(key, -1) + 1
        name = f"client_replay_{_slug(entry['client'])}_{_slug(entry['api'])}_v{entry['version']}_{numbers[key]}"
        if "skip" in entry:
            SKIPPED.append((name, entry["skip"]))
            continue
        play = _replay(entry, partitions)
        play.__doc__ = f"{entry['client']} (client id {entry['client_id']!r}): its {entry['api']} v{entry['version']}"
        scenario(entry["api"], versions=(entry["version"],), quick=False, name=name)(play)


_register()
