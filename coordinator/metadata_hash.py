"""The metadata hash a KIP-848 consumer group records (Kafka 4.1+, KIP-1101), computed as Kafka computes it.

Kafka no longer writes the subscribed topics' metadata into __consumer_offsets (the
ConsumerGroupPartitionMetadata record of Kafka 3.7-4.0); ConsumerGroupMetadataValue carries a hash of it
instead, and the coordinator compares that hash with a fresh one to see that a subscribed topic changed.
Kafka hashes with XXH3-64 (hash4j's Hashing.xxh3_64(), seed 0) over what its hash stream is fed:

    topic hash: byte 0 (the format's magic), the topic id (most, then least significant 64 bits), the
                topic name, the partition count, then per partition its index and each rack of its
                replicas (sorted), each rack as its length and the rack
    group hash: the topic hashes, in the order of the topic names; 0 when no topic is subscribed

hash4j writes integers little endian and a string as its UTF-16 code units (little endian) followed by
its length in code units. XXH3-64 below follows the xxHash specification (doc/xxhash_spec.md in the
xxHash repository): the default 192-byte secret, the 0-16, 17-128, 129-240 and long (stripes of 64
bytes, blocks of 1024) input classes.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Mapping

MASK = (1 << 64) - 1

PRIME32_1, PRIME32_2, PRIME32_3 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D
PRIME64_1, PRIME64_2, PRIME64_3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
PRIME64_4, PRIME64_5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5
PRIME_MX1, PRIME_MX2 = 0x165667919E3779F9, 0x9FB21C651E98DF25

SECRET = bytes.fromhex(
    "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
    "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
    "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
    "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
    "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e"
    "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e"
)


def _u64(data: bytes, at: int) -> int:
    return int.from_bytes(data[at:at + 8], "little")


def _u32(data: bytes, at: int) -> int:
    return int.from_bytes(data[at:at + 4], "little")


def _fold(a: int, b: int) -> int:
    product = a * b
    return (product & MASK) ^ (product >> 64)


def _avalanche(h: int) -> int:
    h ^= h >> 37
    h = (h * PRIME_MX1) & MASK
    return h ^ (h >> 32)


def _xxh64_avalanche(h: int) -> int:
    h ^= h >> 33
    h = (h * PRIME64_2) & MASK
    h ^= h >> 29
    h = (h * PRIME64_3) & MASK
    return h ^ (h >> 32)


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & MASK


def _mix16(data: bytes, at: int, secret_at: int) -> int:
    return _fold(_u64(data, at) ^ _u64(SECRET, secret_at), _u64(data, at + 8) ^ _u64(SECRET, secret_at + 8))


def xxh3_64(data: bytes) -> int:
    """XXH3-64 of `data` with seed 0 and the default secret, as an unsigned 64-bit int."""
    n = len(data)
    if n == 0:
        return _xxh64_avalanche(_u64(SECRET, 56) ^ _u64(SECRET, 64))
    if n <= 3:
        combined = (data[0] << 16) | (data[n >> 1] << 24) | data[n - 1] | (n << 8)
        return _xxh64_avalanche(combined ^ (_u32(SECRET, 0) ^ _u32(SECRET, 4)))
    if n <= 8:
        keyed = ((_u32(data, n - 4) + (_u32(data, 0) << 32)) & MASK) ^ (_u64(SECRET, 8) ^ _u64(SECRET, 16))
        keyed ^= _rotl(keyed, 49) ^ _rotl(keyed, 24)
        keyed = (keyed * PRIME_MX2) & MASK
        keyed ^= ((keyed >> 35) + n) & MASK
        keyed = (keyed * PRIME_MX2) & MASK
        return keyed ^ (keyed >> 28)
    if n <= 16:
        low = _u64(data, 0) ^ (_u64(SECRET, 24) ^ _u64(SECRET, 32))
        high = _u64(data, n - 8) ^ (_u64(SECRET, 40) ^ _u64(SECRET, 48))
        swapped = int.from_bytes(low.to_bytes(8, "little"), "big")
        return _avalanche((n + swapped + high + _fold(low, high)) & MASK)
    acc = (n * PRIME64_1) & MASK
    if n <= 128:
        for i in reversed(range((n - 1) // 32 + 1)):
            acc = (acc + _mix16(data, 16 * i, 32 * i) + _mix16(data, n - 16 * (i + 1), 32 * i + 16)) & MASK
        return _avalanche(acc)
    if n <= 240:
        for i in range(8):
            acc = (acc + _mix16(data, 16 * i, 16 * i)) & MASK
        acc = _avalanche(acc)
        for i in range(8, n // 16):
            acc = (acc + _mix16(data, 16 * i, 16 * (i - 8) + 3)) & MASK
        return _avalanche((acc + _mix16(data, n - 16, 136 - 17)) & MASK)
    return _long(data)


def _long(data: bytes) -> int:
    n = len(data)
    lanes = [PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME32_2, PRIME64_5, PRIME32_1]

    def stripe(at: int, secret_at: int) -> None:
        for lane in range(8):
            value = _u64(data, at + 8 * lane)
            keyed = value ^ _u64(SECRET, secret_at + 8 * lane)
            lanes[lane ^ 1] = (lanes[lane ^ 1] + value) & MASK
            lanes[lane] = (lanes[lane] + (keyed & 0xFFFFFFFF) * (keyed >> 32)) & MASK

    blocks = (n - 1) // 1024
    for block in range(blocks):
        for i in range(16):
            stripe(block * 1024 + i * 64, i * 8)
        for lane in range(8):  # scramble
            acc = lanes[lane]
            lanes[lane] = ((acc ^ (acc >> 47) ^ _u64(SECRET, 128 + 8 * lane)) * PRIME32_1) & MASK
    for i in range((n - 1 - blocks * 1024) // 64):
        stripe(blocks * 1024 + i * 64, i * 8)
    stripe(n - 64, 192 - 64 - 7)
    acc = (n * PRIME64_1) & MASK
    for pair in range(4):
        acc = (acc + _fold(lanes[2 * pair] ^ _u64(SECRET, 11 + 16 * pair),
                           lanes[2 * pair + 1] ^ _u64(SECRET, 19 + 16 * pair))) & MASK
    return _avalanche(acc)


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _string(text: str) -> bytes:
    units = text.encode("utf-16-le", "surrogatepass")
    return units + struct.pack("<i", len(units) // 2)


def topic_hash(topic_id: uuid.UUID, name: str, partition_racks: list[Iterable[str]]) -> int:
    """Kafka's Utils.computeTopicHash (a signed 64-bit int): `partition_racks[i]` are the racks of
    partition i's replicas (empty without broker.rack)."""
    out = bytearray(b"\x00")
    out += struct.pack("<QQ", topic_id.int >> 64, topic_id.int & MASK)
    out += _string(name)
    out += struct.pack("<i", len(partition_racks))
    for index, racks in enumerate(partition_racks):
        out += struct.pack("<i", index)
        for rack in sorted(racks):
            out += struct.pack("<i", len(rack)) + _string(rack)
    return _signed(xxh3_64(bytes(out)))


def group_hash(topic_hashes: Mapping[str, int]) -> int:
    """Kafka's Utils.computeGroupHash: the topic hashes in the order of the topic names; 0 for none."""
    if not topic_hashes:
        return 0
    return _signed(xxh3_64(b"".join(struct.pack("<q", topic_hashes[name]) for name in sorted(topic_hashes))))
