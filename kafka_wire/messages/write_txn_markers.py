"""WriteTxnMarkers (key 27): the transaction coordinator has partition leaders write markers.

Versions 0-2: v1 is flexible, v2 adds each marker's transaction version (KIP-1228: 0/1 legacy,
2 = a TV2 transaction, whose marker epoch is one above its records'). transaction_result: false =
ABORT, true = COMMIT. (Kafka 4 removed v0; it is the same as v1 without flexible encoding.)
"""

from ..schema import BOOL, INT8, INT16, INT32, INT64, STRING, Api, Array, Field

API = Api(
    27, "WriteTxnMarkers", versions="0-2", flexible="1+",
    request=[
        Field("markers", Array("WritableTxnMarker", [
            Field("producer_id", INT64),
            Field("producer_epoch", INT16),
            Field("transaction_result", BOOL),
            Field("topics", Array("WritableTxnMarkerTopic", [
                Field("name", STRING),
                Field("partition_indexes", Array(INT32)),
            ])),
            Field("coordinator_epoch", INT32),
            Field("transaction_version", INT8, "2+", default=0, ignorable=True),
        ])),
    ],
    response=[
        Field("markers", Array("WritableTxnMarkerResult", [
            Field("producer_id", INT64),
            Field("topics", Array("WritableTxnMarkerTopicResult", [
                Field("name", STRING),
                Field("partitions", Array("WritableTxnMarkerPartitionResult", [
                    Field("partition_index", INT32),
                    Field("error_code", INT16),
                ])),
            ])),
        ])),
    ],
)
