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

from kafka_wire.primitives import DecodeError, read_int16, read_int32, read_string

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
