"""WriteTxnMarkers (key 27): the transaction coordinator has partition leaders write markers.

Versions 0-1: v1 is flexible. transaction_result: false = ABORT, true = COMMIT.
"""

from ..schema import BOOL, INT16, INT32, INT64, STRING, Api, Array, Field

API = Api(
    27, "WriteTxnMarkers", versions="0-1", flexible="1+",
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
