"""DescribeCluster (key 60): cluster id, controller and brokers, for the admin client (KIP-700).

Versions 0-2, all flexible; v1 adds the endpoint type (1 brokers, 2 controllers), v2 asks for fenced
brokers too and says which brokers are fenced (KIP-1073).
"""

from ..schema import BOOL, INT8, INT16, INT32, STRING, Api, Array, Field
from .metadata import AUTHORIZED_OPERATIONS_OMITTED

API = Api(
    60, "DescribeCluster", versions="0-2", flexible="0+",
    request=[
        Field("include_cluster_authorized_operations", BOOL),
        Field("endpoint_type", INT8, "1+", default=1),
        Field("include_fenced_brokers", BOOL, "2+"),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("endpoint_type", INT8, "1+", default=1),
        Field("cluster_id", STRING),
        Field("controller_id", INT32, default=-1),
        Field("brokers", Array("DescribeClusterBroker", [
            Field("broker_id", INT32),
            Field("host", STRING),
            Field("port", INT32),
            Field("rack", STRING, nullable="0+", default=None),
            Field("is_fenced", BOOL, "2+"),
        ])),
        Field("cluster_authorized_operations", INT32, default=AUTHORIZED_OPERATIONS_OMITTED),
    ],
)
