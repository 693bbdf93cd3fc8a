"""ReadShareGroupStateSummary (key 87): inter-broker, the group coordinator reads share-partitions'
start offsets (for DescribeShareGroupOffsets) from the share coordinator (KIP-932); v1 adds the
count of records whose delivery is complete, for the lag.

Kafka 4.3.0 defines versions 0-1, flexible. Never advertised to clients.
"""

from ..schema import INT16, INT32, INT64, STRING, UUID, Api, Array, Field

API = Api(
    87, "ReadShareGroupStateSummary", versions="0-1", flexible="0+",
    request=[
        Field("group_id", STRING),
        Field("topics", Array("ReadStateSummaryData", [
            Field("topic_id", UUID),
            Field("partitions", Array("PartitionData", [
                Field("partition", INT32),
                Field("leader_epoch", INT32),
            ])),
        ])),
    ],
    response=[
        Field("results", Array("ReadStateSummaryResult", [
            Field("topic_id", UUID),
            Field("partitions", Array("PartitionResult", [
                Field("partition", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+", default=None),
                Field("state_epoch", INT32),
                Field("leader_epoch", INT32),
                Field("start_offset", INT64),
                Field("delivery_complete_count", INT32, "1+", default=-1, ignorable=True),
            ])),
        ])),
    ],
)
