"""TxnOffsetCommit (key 28): commit offsets as part of a transaction.

Versions 0-5: v2 adds the committed leader epoch, v3 is flexible and adds the group member's
identity (KIP-447) so the coordinator can fence zombie producers, v4 may answer
TRANSACTION_ABORTABLE, v5 (transaction.version 2, KIP-890 part 2) also adds the group's
__consumer_offsets partition to the transaction, in place of AddOffsetsToTxn. v4 and v5 are v3's bytes.
"""

from ..schema import INT16, INT32, INT64, STRING, Api, Array, Field

API = Api(
    28, "TxnOffsetCommit", versions="0-5", flexible="3+",
    request=[
        Field("transactional_id", STRING),
        Field("group_id", STRING),
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("generation_id", INT32, "3+", default=-1),
        Field("member_id", STRING, "3+"),
        Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
        Field("topics", Array("TxnOffsetCommitRequestTopic", [
            Field("name", STRING),
            Field("partitions", Array("TxnOffsetCommitRequestPartition", [
                Field("partition_index", INT32),
                Field("committed_offset", INT64),
                Field("committed_leader_epoch", INT32, "2+", default=-1),
                Field("committed_metadata", STRING, nullable="0+"),
            ])),
        ])),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("topics", Array("TxnOffsetCommitResponseTopic", [
            Field("name", STRING),
            Field("partitions", Array("TxnOffsetCommitResponsePartition", [
                Field("partition_index", INT32),
                Field("error_code", INT16),
            ])),
        ])),
    ],
)
