"""DeleteShareGroupState (key 86): inter-broker, the group coordinator asks the share coordinator
to drop share-partitions' state (KIP-932).

Kafka 4.3.0 defines version 0, flexible. Never advertised to clients.
"""

from ..schema import INT16, INT32, STRING, UUID, Api, Array, Field

API = Api(
    86, "DeleteShareGroupState", versions="0", flexible="0+",
    request=[
        Field("group_id", STRING),
        Field("topics", Array("DeleteStateData", [
            Field("topic_id", UUID),
            Field("partitions", Array("PartitionData", [
                Field("partition", INT32),
            ])),
        ])),
    ],
    response=[
        Field("results", Array("DeleteStateResult", [
            Field("topic_id", UUID),
            Field("partitions", Array("PartitionResult", [
                Field("partition", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+", default=None),
            ])),
        ])),
    ],
)
