"""AddPartitionsToTxn (key 24): a transactional producer adds partitions to its transaction.

Versions 0-5: v3 is flexible; v4 (KIP-890) is the broker-to-coordinator form that verifies several
transactions at once (`transactions`), while v0-3 carry one producer's transaction (`v3_and_below_*`);
v5 may answer TRANSACTION_ABORTABLE (the same bytes as v4).
"""

from ..schema import BOOL, INT16, INT32, INT64, STRING, Api, Array, Field, StructType

# Kafka's common structs: each is used at two places of the message.
ADD_PARTITIONS_TO_TXN_TOPIC = StructType("AddPartitionsToTxnTopic", [
    Field("name", STRING),
    Field("partitions", Array(INT32)),
])

ADD_PARTITIONS_TO_TXN_TOPIC_RESULT = StructType("AddPartitionsToTxnTopicResult", [
    Field("name", STRING),
    Field("results_by_partition", Array("AddPartitionsToTxnPartitionResult", [
        Field("partition_index", INT32),
        Field("partition_error_code", INT16),
    ])),
])

API = Api(
    24, "AddPartitionsToTxn", versions="0-5", flexible="3+",
    request=[
        Field("transactions", Array("AddPartitionsToTxnTransaction", [
            Field("transactional_id", STRING, "4+"),
            Field("producer_id", INT64, "4+"),
            Field("producer_epoch", INT16, "4+"),
            Field("verify_only", BOOL, "4+"),
            Field("topics", Array(ADD_PARTITIONS_TO_TXN_TOPIC), "4+"),
        ]), "4+"),
        Field("v3_and_below_transactional_id", STRING, "0-3"),
        Field("v3_and_below_producer_id", INT64, "0-3"),
        Field("v3_and_below_producer_epoch", INT16, "0-3"),
        Field("v3_and_below_topics", Array(ADD_PARTITIONS_TO_TXN_TOPIC), "0-3"),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16, "4+"),
        Field("results_by_transaction", Array("AddPartitionsToTxnResult", [
            Field("transactional_id", STRING, "4+"),
            Field("topic_results", Array(ADD_PARTITIONS_TO_TXN_TOPIC_RESULT), "4+"),
        ]), "4+"),
        Field("results_by_topic_v3_and_below", Array(ADD_PARTITIONS_TO_TXN_TOPIC_RESULT), "0-3"),
    ],
)
