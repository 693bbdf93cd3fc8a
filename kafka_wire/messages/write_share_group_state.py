"""WriteShareGroupState (key 85): inter-broker, a share-partition leader persists its start
offset and the state batches that changed (KIP-932); v1 adds the count of records whose delivery
is complete (acknowledged or archived) in flight.

Kafka 4.3.0 defines versions 0-1, flexible. Never advertised to clients.
"""

from ..schema import INT16, INT32, INT64, STRING, UUID, Api, Array, Field

from .read_share_group_state import STATE_BATCH_FIELDS

API = Api(
    85, "WriteShareGroupState", versions="0-1", flexible="0+",
    request=[
        Field("group_id", STRING),
        Field("topics", Array("WriteStateData", [
            Field("topic_id", UUID),
            Field("partitions", Array("PartitionData", [
                Field("partition", INT32),
                Field("state_epoch", INT32),
                Field("leader_epoch", INT32),
                Field("start_offset", INT64),
                Field("delivery_complete_count", INT32, "1+", default=-1, ignorable=True),
                Field("state_batches", Array("StateBatch", STATE_BATCH_FIELDS)),
            ])),
        ])),
    ],
    response=[
        Field("results", Array("WriteStateResult", [
            Field("topic_id", UUID),
            Field("partitions", Array("PartitionResult", [
                Field("partition", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+", default=None),
            ])),
        ])),
    ],
)
