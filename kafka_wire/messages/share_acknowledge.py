"""ShareAcknowledge (key 79): acknowledge records delivered by ShareFetch without fetching more
(KIP-932): per offset range, ACCEPT (1), RELEASE (2), REJECT (3), or GAP (0) for offsets that
held no record; v2 adds IsRenewAck (RENEW, 4: extend the acquisition lock) and the lock
timeout in the response.

Kafka 4.3.0 defines versions 1-2, always flexible.
"""

from ..schema import BOOL, INT8, INT16, INT32, INT64, STRING, UUID, Api, Array, Field, StructType

from .share_fetch import NODE_ENDPOINTS

API = Api(
    79, "ShareAcknowledge", versions="1-2", flexible="0+",
    request=[
        Field("group_id", STRING, nullable="0+", default=None),
        Field("member_id", STRING, nullable="0+"),
        Field("share_session_epoch", INT32),
        Field("is_renew_ack", BOOL, "2+", default=False),
        Field("topics", Array("AcknowledgeTopic", [
            Field("topic_id", UUID),
            Field("partitions", Array("AcknowledgePartition", [
                Field("partition_index", INT32),
                Field("acknowledgement_batches", Array("AcknowledgementBatch", [
                    Field("first_offset", INT64),
                    Field("last_offset", INT64),
                    Field("acknowledge_types", Array(INT8)),
                ])),
            ])),
        ])),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("acquisition_lock_timeout_ms", INT32, "2+", ignorable=True),
        Field("responses", Array("ShareAcknowledgeTopicResponse", [
            Field("topic_id", UUID),
            Field("partitions", Array("PartitionData", [
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+", default=None),
                Field("current_leader", StructType("LeaderIdAndEpoch", [
                    Field("leader_id", INT32),
                    Field("leader_epoch", INT32),
                ])),
            ])),
        ])),
        NODE_ENDPOINTS,
    ],
)
