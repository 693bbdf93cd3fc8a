"""DeleteRecords (key 21): advance partitions' log start offsets, deleting the records before them.

Versions 0-2: v1 is the same as v0 (answers throttled after the response), v2 is flexible.
"""

from ..schema import INT16, INT32, INT64, STRING, Api, Array, Field

API = Api(
    21, "DeleteRecords", versions="0-2", flexible="2+",
    request=[
        Field("topics", Array("DeleteRecordsTopic", [
            Field("name", STRING),
            Field("partitions", Array("DeleteRecordsPartition", [
                Field("partition_index", INT32),
                Field("offset", INT64),
            ])),
        ])),
        Field("timeout_ms", INT32),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("topics", Array("DeleteRecordsTopicResult", [
            Field("name", STRING),
            Field("partitions", Array("DeleteRecordsPartitionResult", [
                Field("partition_index", INT32),
                Field("low_watermark", INT64),
                Field("error_code", INT16),
            ])),
        ])),
    ],
)
