"""InitializeShareGroupState (key 83): inter-broker, the group coordinator asks the share
coordinator to create share-partitions' state at a start offset (KIP-932).

Kafka 4.3.0 defines version 0, flexible. Never advertised to clients.
"""

from ..schema import INT16, INT32, INT64, STRING, UUID, Api, Array, Field

API = Api(
    83, "InitializeShareGroupState", versions="0", flexible="0+",
    request=[
        Field("group_id", STRING),
        Field("topics", Array("InitializeStateData", [
            Field("topic_id", UUID),
            Field("partitions", Array("PartitionData", [
                Field("partition", INT32),
                Field("state_epoch", INT32),
                Field("start_offset", INT64),
            ])),
        ])),
    ],
    response=[
        Field("results", Array("InitializeStateResult", [
            Field("topic_id", UUID),
            Field("partitions", Array("PartitionResult", [
                Field("partition", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+", default=None),
            ])),
        ])),
    ],
)
