"""ReadShareGroupState (key 84): inter-broker, a share-partition leader reads its persisted state
(start offset and state batches) from the share coordinator (KIP-932).

Kafka 4.3.0 defines version 0, flexible. Never advertised to clients.
"""

from ..schema import INT8, INT16, INT32, INT64, STRING, UUID, Api, Array, Field

# One run of offsets in one delivery state (0 available, 2 acknowledged, 4 archived) with one
# delivery count: the unit of persisted share-partition state (Read/WriteShareGroupState,
# ShareSnapshotValue, ShareUpdateValue).
STATE_BATCH_FIELDS = [
    Field("first_offset", INT64),
    Field("last_offset", INT64),
    Field("delivery_state", INT8),
    Field("delivery_count", INT16),
]

API = Api(
    84, "ReadShareGroupState", versions="0", flexible="0+",
    request=[
        Field("group_id", STRING),
        Field("topics", Array("ReadStateData", [
            Field("topic_id", UUID),
            Field("partitions", Array("PartitionData", [
                Field("partition", INT32),
                Field("leader_epoch", INT32),
            ])),
        ])),
    ],
    response=[
        Field("results", Array("ReadStateResult", [
            Field("topic_id", UUID),
            Field("partitions", Array("PartitionResult", [
                Field("partition", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+", default=None),
                Field("state_epoch", INT32),
                Field("start_offset", INT64),
                Field("state_batches", Array("StateBatch", STATE_BATCH_FIELDS)),
            ])),
        ])),
    ],
)
