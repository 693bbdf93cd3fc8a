"""ShareFetch (key 78): fetch records for a share group, acquiring them, with acknowledgements
of earlier deliveries piggybacked (KIP-932).

Kafka 4.3.0 defines versions 1-2, always flexible: v1 brings MaxRecords and BatchSize and the
acquisition lock timeout in the response; v2 brings ShareAcquireMode
(0 batch-optimized, 1 record-limit) and IsRenewAck (acknowledgement type 4, RENEW).
A share session epoch of 0 opens a session, -1 closes it.
"""

from ..schema import BOOL, INT8, INT16, INT32, INT64, RECORDS, STRING, UUID, Api, Array, Field, StructType

NODE_ENDPOINTS = Field("node_endpoints", Array("NodeEndpoint", [
    Field("node_id", INT32),
    Field("host", STRING),
    Field("port", INT32),
    Field("rack", STRING, nullable="0+", default=None),
]))

API = Api(
    78, "ShareFetch", versions="1-2", flexible="0+",
    request=[
        Field("group_id", STRING, nullable="0+", default=None),
        Field("member_id", STRING, nullable="0+"),
        Field("share_session_epoch", INT32),
        Field("max_wait_ms", INT32),
        Field("min_bytes", INT32),
        Field("max_bytes", INT32, default=0x7FFFFFFF),
        Field("max_records", INT32, "1+"),
        Field("batch_size", INT32, "1+"),
        Field("share_acquire_mode", INT8, "2+", default=0, ignorable=True),
        Field("is_renew_ack", BOOL, "2+", default=False),
        Field("topics", Array("FetchTopic", [
            Field("topic_id", UUID),
            Field("partitions", Array("FetchPartition", [
                Field("partition_index", INT32),
                Field("partition_max_bytes", INT32, "0"),
                Field("acknowledgement_batches", Array("AcknowledgementBatch", [
                    Field("first_offset", INT64),
                    Field("last_offset", INT64),
                    Field("acknowledge_types", Array(INT8)),
                ])),
            ])),
        ])),
        Field("forgotten_topics_data", Array("ForgottenTopic", [
            Field("topic_id", UUID),
            Field("partitions", Array(INT32)),
        ])),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("acquisition_lock_timeout_ms", INT32, "1+"),
        Field("responses", Array("ShareFetchableTopicResponse", [
            Field("topic_id", UUID),
            Field("partitions", Array("PartitionData", [
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+", default=None),
                Field("acknowledge_error_code", INT16),
                Field("acknowledge_error_message", STRING, nullable="0+", default=None),
                Field("current_leader", StructType("LeaderIdAndEpoch", [
                    Field("leader_id", INT32),
                    Field("leader_epoch", INT32),
                ])),
                # Nullable in v0 only, which 4.3 no longer defines.
                Field("records", RECORDS, nullable="0"),
                Field("acquired_records", Array("AcquiredRecords", [
                    Field("first_offset", INT64),
                    Field("last_offset", INT64),
                    Field("delivery_count", INT16),
                ])),
            ])),
        ])),
        NODE_ENDPOINTS,
    ],
)
