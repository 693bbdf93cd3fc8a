"""Keys and values of the records in Kafka's internal topics __consumer_offsets, __share_group_state
and __transaction_state.

Every key and every value is an int16 version followed by a body in that version's schema, written
as Kafka writes them, so that the records (and tools reading them, such as the console consumer's
offsets formatter) look the same as Apache Kafka's:

    __consumer_offsets   key version 0/1: OffsetCommitKey (group, topic, partition)
                         key version 2:   GroupMetadataKey (group)
                         values:          OffsetCommitValue v0-4, GroupMetadataValue v0-4
                         key versions 3-8: KIP-848 consumer group records (CONSUMER_GROUP_RECORDS),
                                          values all at the flexible version 0
                         key versions 10-15: KIP-932 share group records (SHARE_GROUP_VALUES)
                         key versions 17, 19-23: KIP-1071 streams group records (STREAMS_GROUP_VALUES)
    __share_group_state  key version 0/1: ShareSnapshot / ShareUpdate (group, topic id, partition)
    __transaction_state  key version 0:   TransactionLogKey (transactional id)
                         values:          TransactionLogValue v0-1

A null value (tombstone) deletes the key; the decoders pass None through.
"""

from __future__ import annotations

from . import primitives as p
from .primitives import DecodeError
from .schema import (
    BYTES,
    UUID,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    Array,
    Field,
    Message,
    Struct,
    StructType,
    parse_versions,
)

NEVER_FLEXIBLE = parse_versions(None)

# -- __consumer_offsets keys ------------------------------------------------------------------------

# Kafka writes offset commit keys at version 1; version 0 (written by very old brokers) has the
# same body. The key version is what tells an offset commit from a group metadata record.
OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2

OFFSET_COMMIT_KEY = Message(
    "OffsetCommitKey",
    [
        Field("group", STRING),
        Field("topic", STRING),
        Field("partition", INT32),
    ],
    flexible=NEVER_FLEXIBLE,
)

GROUP_METADATA_KEY = Message("GroupMetadataKey", [Field("group", STRING)], flexible=NEVER_FLEXIBLE)

OffsetCommitKey = OFFSET_COMMIT_KEY.cls
GroupMetadataKey = GROUP_METADATA_KEY.cls

# -- __consumer_offsets values ----------------------------------------------------------------------

OFFSET_COMMIT_VALUE = Message(
    "OffsetCommitValue",
    [
        Field("offset", INT64),
        Field("leader_epoch", INT32, "3+", default=-1),
        Field("metadata", STRING),
        Field("commit_timestamp", INT64),
        Field("expire_timestamp", INT64, "1", default=-1),
        # Kafka 4.x: the committed topic's id (tagged, left out when zero, as for a TxnOffsetCommit).
        Field("topic_id", UUID, "4+", tag=0),
    ],
    flexible=parse_versions("4+"),
)
OFFSET_COMMIT_VALUE_VERSIONS = (0, 4)

GROUP_METADATA_VALUE = Message(
    "GroupMetadataValue",
    [
        Field("protocol_type", STRING),
        Field("generation", INT32),
        Field("protocol", STRING, nullable="0+"),
        Field("leader", STRING, nullable="0+"),
        Field("current_state_timestamp", INT64, "2+", default=-1),
        Field("members", Array("MemberMetadata", [
            Field("member_id", STRING),
            Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
            Field("client_id", STRING),
            Field("client_host", STRING),
            Field("rebalance_timeout", INT32, "1+"),
            Field("session_timeout", INT32),
            Field("subscription", BYTES),
            Field("assignment", BYTES),
        ])),
    ],
    flexible=parse_versions("4+"),
)
GROUP_METADATA_VALUE_VERSIONS = (0, 4)
# Kafka 2.3+ writes v3, the highest non-flexible version, until a tagged field is added (KIP-915).
GROUP_METADATA_VALUE_VERSION = 3

OffsetCommitValue = OFFSET_COMMIT_VALUE.cls
GroupMetadataValue = GROUP_METADATA_VALUE.cls
MemberMetadata = GroupMetadataValue.MemberMetadata

# -- __consumer_offsets: KIP-848 consumer groups -----------------------------------------------------

# Key version (Kafka calls it the record type) -> record name. Every key starts with the group id;
# member records add the member id.
CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_PARTITION_METADATA = 4
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
MEMBER_KEYED_RECORDS = (CONSUMER_GROUP_MEMBER_METADATA, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
                        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT)

CONSUMER_GROUP_KEY = Message("ConsumerGroupKey", [Field("group_id", STRING)], flexible=NEVER_FLEXIBLE)
CONSUMER_GROUP_MEMBER_KEY = Message(
    "ConsumerGroupMemberKey", [Field("group_id", STRING), Field("member_id", STRING)], flexible=NEVER_FLEXIBLE
)

_FLEXIBLE_V0 = parse_versions("0+")
_TOPIC_PARTITIONS = [Field("topic_id", UUID), Field("partitions", Array(INT32))]
# Kafka 4.3 (KIP-1251): the epoch each partition was assigned to the member at, as long as
# Partitions; null (absent) in records of older brokers, read as the member epoch.
_TOPIC_PARTITIONS_WITH_EPOCHS = [*_TOPIC_PARTITIONS,
                                 Field("assignment_epochs", Array(INT32), tag=0, nullable="0+", default=None)]

CONSUMER_GROUP_VALUES = {
    CONSUMER_GROUP_METADATA: Message("ConsumerGroupMetadataValue", [
        Field("epoch", INT32),
        # Kafka 4.1+ (KIP-1101): a hash of the subscribed topics' metadata; 0 when not computed.
        Field("metadata_hash", INT64, tag=0, default=0),
    ], flexible=_FLEXIBLE_V0),
    CONSUMER_GROUP_PARTITION_METADATA: Message("ConsumerGroupPartitionMetadataValue", [
        Field("topics", Array("TopicMetadata", [
            Field("topic_id", UUID),
            Field("topic_name", STRING),
            Field("num_partitions", INT32),
            Field("partition_metadata", Array("PartitionMetadata", [
                Field("partition", INT32),
                Field("racks", Array(STRING)),
            ])),
        ])),
    ], flexible=_FLEXIBLE_V0),
    CONSUMER_GROUP_MEMBER_METADATA: Message("ConsumerGroupMemberMetadataValue", [
        Field("instance_id", STRING, nullable="0+", default=None),
        Field("rack_id", STRING, nullable="0+", default=None),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("subscribed_topic_names", Array(STRING)),
        Field("subscribed_topic_regex", STRING, nullable="0+", default=None),
        Field("rebalance_timeout_ms", INT32, default=-1),
        Field("server_assignor", STRING, nullable="0+", default=None),
        # A member using the classic protocol inside a consumer group (online migration): its session
        # timeout and JoinGroup protocols; null for a member heartbeating with ConsumerGroupHeartbeat.
        Field("classic_member_metadata", StructType("ClassicMemberMetadata", [
            Field("session_timeout_ms", INT32),
            Field("supported_protocols", Array("ClassicProtocol", [
                Field("name", STRING),
                Field("metadata", BYTES),
            ])),
        ]), tag=0, nullable="0+", default=None, tag_null=True),  # Kafka writes a null one too
    ], flexible=_FLEXIBLE_V0),
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: Message("ConsumerGroupTargetAssignmentMetadataValue", [
        Field("assignment_epoch", INT32),
        # Kafka 4.3: when the target assignment was computed (ms).
        Field("assignment_timestamp", INT64, tag=0, default=0),
    ], flexible=_FLEXIBLE_V0),
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: Message("ConsumerGroupTargetAssignmentMemberValue", [
        Field("topic_partitions", Array("TopicPartition", _TOPIC_PARTITIONS)),
    ], flexible=_FLEXIBLE_V0),
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: Message("ConsumerGroupCurrentMemberAssignmentValue", [
        Field("member_epoch", INT32),
        Field("previous_member_epoch", INT32),
        Field("state", INT8),
        Field("assigned_partitions", Array("TopicPartitions", _TOPIC_PARTITIONS_WITH_EPOCHS)),
        Field("partitions_pending_revocation", Array("TopicPartitions", _TOPIC_PARTITIONS_WITH_EPOCHS)),
    ], flexible=_FLEXIBLE_V0),
}
CONSUMER_GROUP_VALUE_VERSION = 0


# -- __transaction_state ----------------------------------------------------------------------------

TRANSACTION_LOG_KEY_VERSION = 0

TRANSACTION_LOG_KEY = Message(
    "TransactionLogKey", [Field("transactional_id", STRING)], flexible=NEVER_FLEXIBLE
)

TRANSACTION_LOG_VALUE = Message(
    "TransactionLogValue",
    [
        Field("producer_id", INT64),
        Field("previous_producer_id", INT64, "1+", tag=0, default=-1),
        Field("next_producer_id", INT64, "1+", tag=1, default=-1),
        Field("producer_epoch", INT16),
        Field("next_producer_epoch", INT16, "1+", tag=3, default=-1),
        Field("transaction_timeout_ms", INT32),
        Field("transaction_status", INT8),
        # Null when the transaction is Empty.
        Field("transaction_partitions", Array("PartitionsSchema", [
            Field("topic", STRING),
            Field("partition_ids", Array(INT32)),
        ]), nullable="0+"),
        Field("transaction_last_update_timestamp_ms", INT64),
        Field("transaction_start_timestamp_ms", INT64),
        Field("client_transaction_version", INT16, "1+", tag=2),
    ],
    flexible=parse_versions("1+"),
)
TRANSACTION_LOG_VALUE_VERSIONS = (0, 1)
# Kafka writes v0 unless transaction.version >= 1 is enabled, which brings the flexible v1.
TRANSACTION_LOG_VALUE_VERSION = 0

TransactionLogKey = TRANSACTION_LOG_KEY.cls
TransactionLogValue = TRANSACTION_LOG_VALUE.cls
PartitionsSchema = TransactionLogValue.PartitionsSchema


# -- version-prefixed encoding ----------------------------------------------------------------------


def _encode_prefixed(message: Message, obj, version: int) -> bytes:
    w = message.encode(obj, version)
    return p.INT16.pack(version) + w.to_bytes()


def _read_version(data, what: str, versions: tuple[int, int]) -> int:
    version, _ = p.read_int16(data, 0)
    if not versions[0] <= version <= versions[1]:
        raise DecodeError(f"unknown {what} version {version}")
    return version


def _decode_prefixed(message: Message, data, versions: tuple[int, int]):
    if data is None:
        return None
    version = _read_version(data, message.name, versions)
    # Like Kafka's readers, ignore bytes after the body: a newer writer may have added some.
    return message.decode(data, version, 2, exact=False)


def encode_offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return _encode_prefixed(
        OFFSET_COMMIT_KEY,
        OffsetCommitKey(group=group, topic=topic, partition=partition),
        OFFSET_COMMIT_KEY_VERSION,
    )


def encode_group_metadata_key(group: str) -> bytes:
    return _encode_prefixed(GROUP_METADATA_KEY, GroupMetadataKey(group=group), GROUP_METADATA_KEY_VERSION)


def decode_internal_key(data) -> Struct:
    """Decode a __consumer_offsets key: an OffsetCommitKey (versions 0, 1) or a GroupMetadataKey (2).

    Other versions (KIP-848 consumer group records, share groups, ...) raise DecodeError.
    """
    version = _read_version(data, "__consumer_offsets key", (0, GROUP_METADATA_KEY_VERSION))
    message = GROUP_METADATA_KEY if version == GROUP_METADATA_KEY_VERSION else OFFSET_COMMIT_KEY
    return message.decode(data, 0, 2)


def encode_offset_commit_value(value, version: int | None = None) -> bytes:
    """Encode at the version Kafka 4.x picks (GroupCoordinatorRecordHelpers.offsetCommitValueVersion): v1
    when the commit carries an expire timestamp (OffsetCommit v2-4 with a retention time), otherwise v4,
    the flexible one, with the topic id as tagged field 0 when there is one (Kafka 3.x wrote v3; its
    readers take v4 and skip the tag)."""
    if version is None:
        version = 1 if value.expire_timestamp != -1 else 4
    return _encode_prefixed(OFFSET_COMMIT_VALUE, value, version)


def decode_offset_commit_value(data):
    return _decode_prefixed(OFFSET_COMMIT_VALUE, data, OFFSET_COMMIT_VALUE_VERSIONS)


def encode_group_metadata_value(value, version: int = GROUP_METADATA_VALUE_VERSION) -> bytes:
    return _encode_prefixed(GROUP_METADATA_VALUE, value, version)


def decode_group_metadata_value(data):
    return _decode_prefixed(GROUP_METADATA_VALUE, data, GROUP_METADATA_VALUE_VERSIONS)


def encode_transaction_log_key(transactional_id: str) -> bytes:
    return _encode_prefixed(
        TRANSACTION_LOG_KEY, TransactionLogKey(transactional_id=transactional_id), TRANSACTION_LOG_KEY_VERSION
    )


def decode_transaction_log_key(data):
    _read_version(data, "TransactionLogKey", (TRANSACTION_LOG_KEY_VERSION, TRANSACTION_LOG_KEY_VERSION))
    return TRANSACTION_LOG_KEY.decode(data, 0, 2)


def encode_transaction_log_value(value, version: int = TRANSACTION_LOG_VALUE_VERSION) -> bytes:
    return _encode_prefixed(TRANSACTION_LOG_VALUE, value, version)


def decode_transaction_log_value(data):
    return _decode_prefixed(TRANSACTION_LOG_VALUE, data, TRANSACTION_LOG_VALUE_VERSIONS)


def encode_consumer_group_key(record_type: int, group_id: str, member_id: str | None = None) -> bytes:
    """The key of a KIP-848 consumer group record: its type (3-8) as the key version, then the
    group id (and the member id for member records)."""
    if record_type in MEMBER_KEYED_RECORDS:
        return _encode_prefixed(CONSUMER_GROUP_MEMBER_KEY,
                                CONSUMER_GROUP_MEMBER_KEY.cls(group_id=group_id, member_id=member_id), record_type)
    if record_type not in CONSUMER_GROUP_VALUES:
        raise ValueError(f"not a consumer group record type: {record_type}")
    return _encode_prefixed(CONSUMER_GROUP_KEY, CONSUMER_GROUP_KEY.cls(group_id=group_id), record_type)


def encode_consumer_group_value(record_type: int, value) -> bytes:
    """A consumer group record value (a generated object or a dict of its fields), at version 0."""
    return _encode_prefixed(CONSUMER_GROUP_VALUES[record_type], value, CONSUMER_GROUP_VALUE_VERSION)


def consumer_group_value_class(record_type: int):
    return CONSUMER_GROUP_VALUES[record_type].cls


def decode_consumer_group_record(key, value):
    """(record type, group id, member id or None, value or None for a tombstone) of a KIP-848
    consumer group record; None when the key is not one (offset commits, classic groups, share
    and streams groups). Raises DecodeError on a malformed body."""
    return _decode_group_record(key, value, CONSUMER_GROUP_VALUES, MEMBER_KEYED_RECORDS)


def _decode_group_record(key, value, values: dict, member_keyed):
    """(record type, group id, member id or None, value or None) of a group record whose type is
    one of `values`' (keyed by group id, and member id for the `member_keyed` types); None otherwise."""
    if key is None or len(key) < 2:
        return None
    record_type, _ = p.read_int16(key, 0)
    if record_type not in values:
        return None
    if record_type in member_keyed:
        decoded = CONSUMER_GROUP_MEMBER_KEY.decode(key, 0, 2)
        member_id = decoded.member_id
    else:
        decoded = CONSUMER_GROUP_KEY.decode(key, 0, 2)
        member_id = None
    body = None
    if value is not None:
        body = _decode_prefixed(values[record_type], value, (0, 0x7FFF))
    return record_type, decoded.group_id, member_id, body


# -- __consumer_offsets: KIP-932 share groups ---------------------------------------------------------

# Key version (record type) -> record name, as Kafka 4.3's group coordinator writes them. Every key
# starts with the group id; member records add the member id. Values are at the flexible version 0.
SHARE_GROUP_MEMBER_METADATA = 10
SHARE_GROUP_METADATA = 11
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = 12
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = 13
SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = 14
SHARE_GROUP_STATE_PARTITION_METADATA = 15
SHARE_GROUP_MEMBER_KEYED_RECORDS = (SHARE_GROUP_MEMBER_METADATA, SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
                                    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT)

_SHARE_TOPIC_PARTITIONS_INFO = [Field("topic_id", UUID), Field("topic_name", STRING), Field("partitions", Array(INT32))]

SHARE_GROUP_VALUES = {
    SHARE_GROUP_MEMBER_METADATA: Message("ShareGroupMemberMetadataValue", [
        Field("rack_id", STRING, nullable="0+", default=None),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("subscribed_topic_names", Array(STRING)),
    ], flexible=_FLEXIBLE_V0),
    SHARE_GROUP_METADATA: Message("ShareGroupMetadataValue", [
        Field("epoch", INT32),
        Field("metadata_hash", INT64),
    ], flexible=_FLEXIBLE_V0),
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: Message("ShareGroupTargetAssignmentMetadataValue", [
        Field("assignment_epoch", INT32),
        Field("assignment_timestamp", INT64, tag=0, default=0, ignorable=True),
    ], flexible=_FLEXIBLE_V0),
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER: Message("ShareGroupTargetAssignmentMemberValue", [
        Field("topic_partitions", Array("TopicPartition", _TOPIC_PARTITIONS)),
    ], flexible=_FLEXIBLE_V0),
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: Message("ShareGroupCurrentMemberAssignmentValue", [
        Field("member_epoch", INT32),
        Field("previous_member_epoch", INT32),
        Field("state", INT8),
        Field("assigned_partitions", Array("TopicPartitions", _TOPIC_PARTITIONS)),
    ], flexible=_FLEXIBLE_V0),
    # Which share-partitions' state the share coordinator has initialized, is initializing, or is
    # deleting for the group (a partition is assigned only once its state is initialized).
    SHARE_GROUP_STATE_PARTITION_METADATA: Message("ShareGroupStatePartitionMetadataValue", [
        Field("initializing_topics", Array("TopicPartitionsInfo", _SHARE_TOPIC_PARTITIONS_INFO)),
        Field("initialized_topics", Array("TopicPartitionsInfo", _SHARE_TOPIC_PARTITIONS_INFO)),
        Field("deleting_topics", Array("TopicInfo", [Field("topic_id", UUID), Field("topic_name", STRING)])),
    ], flexible=_FLEXIBLE_V0),
}
SHARE_GROUP_VALUE_VERSION = 0


def encode_share_group_key(record_type: int, group_id: str, member_id: str | None = None) -> bytes:
    """The key of a share group record in __consumer_offsets: its type (10-15) as the key version,
    then the group id (and the member id for member records)."""
    if record_type in SHARE_GROUP_MEMBER_KEYED_RECORDS:
        return _encode_prefixed(CONSUMER_GROUP_MEMBER_KEY,
                                CONSUMER_GROUP_MEMBER_KEY.cls(group_id=group_id, member_id=member_id), record_type)
    if record_type not in SHARE_GROUP_VALUES:
        raise ValueError(f"not a share group record type: {record_type}")
    return _encode_prefixed(CONSUMER_GROUP_KEY, CONSUMER_GROUP_KEY.cls(group_id=group_id), record_type)


def encode_share_group_value(record_type: int, value) -> bytes:
    """A share group record value (a generated object or a dict of its fields), at version 0."""
    return _encode_prefixed(SHARE_GROUP_VALUES[record_type], value, SHARE_GROUP_VALUE_VERSION)


def share_group_value_class(record_type: int):
    return SHARE_GROUP_VALUES[record_type].cls


def decode_share_group_record(key, value):
    """(record type, group id, member id or None, value or None for a tombstone) of a share group
    record in __consumer_offsets; None when the key is not one. Raises DecodeError when malformed."""
    return _decode_group_record(key, value, SHARE_GROUP_VALUES, SHARE_GROUP_MEMBER_KEYED_RECORDS)


# -- __consumer_offsets: KIP-1071 streams groups -------------------------------------------------------

# Key version (record type) -> record name, as Kafka 4.3's group coordinator numbers them
# (CoordinatorRecordType; 18 is not written by 4.3). Every key starts with the group id; member
# records add the member id. Values are at the flexible version 0, with Kafka 4.3's fields (read off
# its generated classes) and tagged fields.
STREAMS_GROUP_METADATA = 17
STREAMS_GROUP_MEMBER_METADATA = 19
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA = 20
STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER = 21
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT = 22
STREAMS_GROUP_TOPOLOGY = 23
STREAMS_GROUP_MEMBER_KEYED_RECORDS = (STREAMS_GROUP_MEMBER_METADATA, STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER,
                                      STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT)

_STREAMS_KEY_VALUE = [Field("key", STRING), Field("value", STRING)]
_STREAMS_TOPIC_INFO = [Field("name", STRING), Field("partitions", INT32), Field("replication_factor", INT16),
                       Field("topic_configs", Array("TopicConfig", _STREAMS_KEY_VALUE))]
_STREAMS_TASK_IDS = Array("TaskIds", [Field("subtopology_id", STRING), Field("partitions", Array(INT32))])
# The current assignment's tasks carry the epoch each was assigned at (tagged, null when absent).
_STREAMS_TASK_IDS_WITH_EPOCHS = Array("TaskIds", [
    Field("subtopology_id", STRING), Field("partitions", Array(INT32)),
    Field("assignment_epochs", Array(INT32), tag=0, nullable="0+", default=None)])

STREAMS_GROUP_VALUES = {
    STREAMS_GROUP_METADATA: Message("StreamsGroupMetadataValue", [
        Field("epoch", INT32),
        Field("metadata_hash", INT64),
        Field("validated_topology_epoch", INT32, tag=0, default=-1),
        Field("last_assignment_configs", Array("LastAssignmentConfig", _STREAMS_KEY_VALUE), tag=1,
              nullable="0+", default=None),
    ], flexible=_FLEXIBLE_V0),
    STREAMS_GROUP_TOPOLOGY: Message("StreamsGroupTopologyValue", [
        Field("epoch", INT32),
        Field("subtopologies", Array("Subtopology", [
            Field("subtopology_id", STRING),
            Field("source_topics", Array(STRING)),
            Field("source_topic_regex", Array(STRING)),
            Field("state_changelog_topics", Array("TopicInfo", _STREAMS_TOPIC_INFO)),
            Field("repartition_sink_topics", Array(STRING)),
            Field("repartition_source_topics", Array("TopicInfo", _STREAMS_TOPIC_INFO)),
            Field("copartition_groups", Array("CopartitionGroup", [
                Field("source_topics", Array(INT16)),
                Field("source_topic_regex", Array(INT16)),
                Field("repartition_source_topics", Array(INT16)),
            ])),
        ])),
    ], flexible=_FLEXIBLE_V0),
    STREAMS_GROUP_MEMBER_METADATA: Message("StreamsGroupMemberMetadataValue", [
        Field("instance_id", STRING, nullable="0+", default=None),
        Field("rack_id", STRING, nullable="0+", default=None),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("rebalance_timeout_ms", INT32),
        Field("topology_epoch", INT32),
        Field("process_id", STRING),
        Field("user_endpoint", StructType("Endpoint", [Field("host", STRING), Field("port", INT32)]),
              nullable="0+", default=None),
        Field("client_tags", Array("KeyValue", _STREAMS_KEY_VALUE)),
    ], flexible=_FLEXIBLE_V0),
    STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA: Message("StreamsGroupTargetAssignmentMetadataValue", [
        Field("assignment_epoch", INT32),
        Field("assignment_timestamp", INT64, tag=0, default=0),
    ], flexible=_FLEXIBLE_V0),
    STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER: Message("StreamsGroupTargetAssignmentMemberValue", [
        Field("active_tasks", _STREAMS_TASK_IDS),
        Field("standby_tasks", _STREAMS_TASK_IDS),
        Field("warmup_tasks", _STREAMS_TASK_IDS),
    ], flexible=_FLEXIBLE_V0),
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT: Message("StreamsGroupCurrentMemberAssignmentValue", [
        Field("member_epoch", INT32),
        Field("previous_member_epoch", INT32),
        Field("state", INT8),
        Field("active_tasks", _STREAMS_TASK_IDS_WITH_EPOCHS),
        Field("standby_tasks", _STREAMS_TASK_IDS_WITH_EPOCHS),
        Field("warmup_tasks", _STREAMS_TASK_IDS_WITH_EPOCHS),
        Field("active_tasks_pending_revocation", _STREAMS_TASK_IDS_WITH_EPOCHS),
        Field("standby_tasks_pending_revocation", _STREAMS_TASK_IDS_WITH_EPOCHS),
        Field("warmup_tasks_pending_revocation", _STREAMS_TASK_IDS_WITH_EPOCHS),
    ], flexible=_FLEXIBLE_V0),
}
STREAMS_GROUP_VALUE_VERSION = 0


def encode_streams_group_key(record_type: int, group_id: str, member_id: str | None = None) -> bytes:
    """The key of a streams group record in __consumer_offsets: its type (17-23) as the key version,
    then the group id (and the member id for member records)."""
    if record_type in STREAMS_GROUP_MEMBER_KEYED_RECORDS:
        return _encode_prefixed(CONSUMER_GROUP_MEMBER_KEY,
                                CONSUMER_GROUP_MEMBER_KEY.cls(group_id=group_id, member_id=member_id), record_type)
    if record_type not in STREAMS_GROUP_VALUES:
        raise ValueError(f"not a streams group record type: {record_type}")
    return _encode_prefixed(CONSUMER_GROUP_KEY, CONSUMER_GROUP_KEY.cls(group_id=group_id), record_type)


def encode_streams_group_value(record_type: int, value) -> bytes:
    """A streams group record value (a generated object or a dict of its fields), at version 0."""
    return _encode_prefixed(STREAMS_GROUP_VALUES[record_type], value, STREAMS_GROUP_VALUE_VERSION)


def decode_streams_group_record(key, value):
    """(record type, group id, member id or None, value or None for a tombstone) of a streams group
    record in __consumer_offsets; None when the key is not one. Raises DecodeError when malformed."""
    return _decode_group_record(key, value, STREAMS_GROUP_VALUES, STREAMS_GROUP_MEMBER_KEYED_RECORDS)


# -- __share_group_state ----------------------------------------------------------------------------

# The share coordinator's records, keyed by (group, topic id, partition): a snapshot of a
# share-partition's whole state (type 0), and updates since it (type 1) that a reader applies on top.
SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1

SHARE_STATE_KEY = Message("SharePartitionKey", [
    Field("group_id", STRING),
    Field("topic_id", UUID),
    Field("partition", INT32),
], flexible=NEVER_FLEXIBLE)

_STATE_BATCH = Array("StateBatch", [
    Field("first_offset", INT64),
    Field("last_offset", INT64),
    Field("delivery_state", INT8),
    Field("delivery_count", INT16),
])

SHARE_STATE_VALUES = {
    SHARE_SNAPSHOT: Message("ShareSnapshotValue", [
        Field("snapshot_epoch", INT32),
        Field("state_epoch", INT32),
        Field("leader_epoch", INT32),
        Field("start_offset", INT64),
        Field("delivery_complete_count", INT32, tag=0, default=-1),
        Field("create_timestamp", INT64),
        Field("write_timestamp", INT64),
        Field("state_batches", _STATE_BATCH),
    ], flexible=_FLEXIBLE_V0),
    SHARE_UPDATE: Message("ShareUpdateValue", [
        Field("snapshot_epoch", INT32),
        Field("leader_epoch", INT32),
        Field("start_offset", INT64),
        Field("delivery_complete_count", INT32, tag=0, default=-1),
        Field("state_batches", _STATE_BATCH),
    ], flexible=_FLEXIBLE_V0),
}
SHARE_STATE_VALUE_VERSION = 0


def encode_share_state_key(record_type: int, group_id: str, topic_id, partition: int) -> bytes:
    """The key of a __share_group_state record: its type (0 snapshot, 1 update) as the key version,
    then group id, topic id and partition."""
    if record_type not in SHARE_STATE_VALUES:
        raise ValueError(f"not a share state record type: {record_type}")
    return _encode_prefixed(SHARE_STATE_KEY,
                            SHARE_STATE_KEY.cls(group_id=group_id, topic_id=topic_id, partition=partition), record_type)


def encode_share_state_value(record_type: int, value) -> bytes:
    return _encode_prefixed(SHARE_STATE_VALUES[record_type], value, SHARE_STATE_VALUE_VERSION)


def share_state_value_class(record_type: int):
    return SHARE_STATE_VALUES[record_type].cls


def decode_share_state_record(key, value):
    """(record type, key, value or None for a tombstone) of a __share_group_state record.
    Raises DecodeError on an unknown type or a malformed body."""
    record_type = _read_version(key, "__share_group_state key", (SHARE_SNAPSHOT, SHARE_UPDATE))
    decoded = SHARE_STATE_KEY.decode(key, 0, 2)
    body = None
    if value is not None:
        body = _decode_prefixed(SHARE_STATE_VALUES[record_type], value, (0, 0x7FFF))
    return record_type, decoded, body
