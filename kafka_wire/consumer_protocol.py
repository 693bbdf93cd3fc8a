"""The embedded consumer protocol (protocol type "consumer"): what subscriptions and assignments say.

The broker relays these bytes between members untouched; it reads them only to know which
topics a group consumes (OffsetDelete's GROUP_SUBSCRIBED_TO_TOPIC, offset expiry of Stable
groups) and to show assignments. Every version starts with the v0 layout, so reading the v0
prefix is enough (Kafka parses them the same way):

    ConsumerProtocolSubscription: version int16, topics [string], user_data bytes, ...
    ConsumerProtocolAssignment:   version int16, assigned_partitions [topic string, partitions [int32]],
                                  user_data bytes
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafka_wire.primitives import DecodeError, read_bytes, read_int16, read_int32, read_string, write_string

CONSUMER_PROTOCOL_TYPE = "consumer"


def subscribed_topics(metadata) -> list[str] | None:
    """The topics of a ConsumerProtocolSubscription, or None when the bytes do not parse."""
    try:
        version, pos = read_int16(metadata, 0)
        if version < 0:
            return None
        count, pos = read_int32(metadata, pos)
        if count < 0 or count > len(metadata):
            return None
        topics = []
        for _ in range(count):
            topic, pos = read_string(metadata, pos)
            topics.append(topic)
        return topics
    except (DecodeError, UnicodeDecodeError):
        return None


def assigned_partitions(assignment) -> list[tuple[str, list[int]]] | None:
    """The (topic, partitions) of a ConsumerProtocolAssignment, or None when they do not parse."""
    if not assignment:
        return []
    try:
        version, pos = read_int16(assignment, 0)
        if version < 0:
            return None
        count, pos = read_int32(assignment, pos)
        if count < 0 or count > len(assignment):
            return None
        result = []
        for _ in range(count):
            topic, pos = read_string(assignment, pos)
            n, pos = read_int32(assignment, pos)
            if n < 0 or n > len(assignment):
                return None
            partitions = []
            for _ in range(n):
                partition, pos = read_int32(assignment, pos)
                partitions.append(partition)
            result.append((topic, partitions))
        return result
    except (DecodeError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class Subscription:
    """What a classic member's JoinGroup metadata says, as the online migration reads it (Kafka's
    ConsumerProtocolSubscription v0-v3): topics, the partitions it still owns (v1+), its rack (v3+)."""

    version: int
    topics: tuple[str, ...]
    owned_partitions: tuple[tuple[str, tuple[int, ...]], ...] = ()
    rack_id: str | None = None


def parse_subscription(metadata) -> Subscription | None:
    """The full subscription, or None when the bytes do not parse (Kafka's SchemaException)."""
    try:
        version, pos = read_int16(metadata, 0)
        if version < 0:
            return None
        topics, pos = _read_array(metadata, pos, read_string)
        _, pos = read_bytes(metadata, pos, nullable=True)  # user data
        owned = []
        rack = None
        if version >= 1:
            count, pos = read_int32(metadata, pos)
            if count < 0 or count > len(metadata):
                return None
            for _ in range(count):
                topic, pos = read_string(metadata, pos)
                partitions, pos = _read_array(metadata, pos, read_int32)
                owned.append((topic, tuple(partitions)))
        if version >= 2:
            _, pos = read_int32(metadata, pos)  # generation id
        if version >= 3:
            rack, pos = read_string(metadata, pos, nullable=True)
        return Subscription(version, tuple(topics), tuple(owned), rack)
    except (DecodeError, UnicodeDecodeError):
        return None


def _read_array(buf, pos: int, read_item) -> tuple[list, int]:
    """A consumer-protocol array: an int32 count (checked against the buffer), then its items."""
    count, pos = read_int32(buf, pos)
    if count < 0 or count > len(buf):
        raise DecodeError("bad array length")
    items = []
    for _ in range(count):
        item, pos = read_item(buf, pos)
        items.append(item)
    return items, pos


def protocol_version(metadata) -> int:
    """The version a member's subscription is written at (its assignment is answered at the same
    one, as Kafka's ConsumerProtocol.deserializeVersion); 0 when unreadable."""
    try:
        version, _ = read_int16(metadata, 0)
    except DecodeError:
        return 0
    return max(version, 0)


def serialize_subscription(topics, version: int = 0) -> bytes:
    """A ConsumerProtocolSubscription v0 (what a consumer's JoinGroup metadata carries): its
    topics, no user data."""
    out = bytearray(struct.pack(">hi", version, len(topics)))
    for topic in topics:
        write_string(out, topic)
    out += struct.pack(">i", -1)
    return bytes(out)


def serialize_assignment(partitions, version: int = 0) -> bytes:
    """A ConsumerProtocolAssignment (same layout at every version) without user data, from
    (topic, partitions) pairs."""
    out = bytearray(struct.pack(">hi", min(version, 3), len(partitions)))
    for topic, parts in partitions:
        write_string(out, topic)
        out += struct.pack(f">i{len(parts)}i", len(parts), *parts)
    out += struct.pack(">i", -1)
    return bytes(out)
