"""DescribeLogDirs (key 35): each log directory of a broker, its partitions' sizes and its disk space.

Versions 1-5 (v0 was removed in Kafka 4.0, KIP-896): v2 is flexible, v3 adds the top-level error
code, v4 the log directory's total and usable bytes (KIP-827), v5 whether it is cordoned (KIP-1066).
Null `topics` describes every partition.
"""

from ..schema import BOOL, INT16, INT32, INT64, STRING, Api, Array, Field

API = Api(
    35, "DescribeLogDirs", versions="1-5", flexible="2+",
    request=[
        Field("topics", Array("DescribableLogDirTopic", [
            Field("topic", STRING),
            Field("partitions", Array(INT32)),
        ]), nullable="0+"),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16, "3+"),
        Field("results", Array("DescribeLogDirsResult", [
            Field("error_code", INT16),
            Field("log_dir", STRING),
            Field("topics", Array("DescribeLogDirsTopic", [
                Field("name", STRING),
                Field("partitions", Array("DescribeLogDirsPartition", [
                    Field("partition_index", INT32),
                    Field("partition_size", INT64),
                    Field("offset_lag", INT64),
                    Field("is_future_key", BOOL),
                ])),
            ])),
            Field("total_bytes", INT64, "4+", default=-1, ignorable=True),
            Field("usable_bytes", INT64, "4+", default=-1, ignorable=True),
            Field("is_cordoned", BOOL, "5+", ignorable=True),
        ])),
    ],
)
