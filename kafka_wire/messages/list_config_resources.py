"""ListConfigResources (key 74): the config resources a cluster has (KIP-1142; until Kafka 4.1 it was
ListClientMetricsResources, KIP-714, which v0 still is).

Versions 0-1, flexible: v0 lists client-metrics resources only; v1 takes the resource types to list
(empty: every type the broker lists) and answers each resource's type (default 16, CLIENT_METRICS,
which is what a v0 answer's resources are).
"""

from ..schema import INT8, INT16, INT32, STRING, Api, Array, Field

API = Api(
    74, "ListConfigResources", versions="0-1", flexible="0+",
    request=[
        Field("resource_types", Array(INT8), "1+"),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("config_resources", Array("ConfigResource", [
            Field("resource_name", STRING),
            Field("resource_type", INT8, "1+", default=16, ignorable=True),
        ])),
    ],
)
