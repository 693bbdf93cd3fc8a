"""DescribeAcls (key 29): the ACL bindings matching a filter, grouped by resource pattern.

Versions 1-3 (v0 was removed in Kafka 4.0); flexible from v2. Null filter strings match anything.
"""

from ..schema import INT8, INT16, INT32, STRING, Api, Array, Field

API = Api(
    29, "DescribeAcls", versions="1-3", flexible="2+",
    request=[
        Field("resource_type_filter", INT8),
        Field("resource_name_filter", STRING, nullable="0+"),
        Field("pattern_type_filter", INT8, "1+", default=3),
        Field("principal_filter", STRING, nullable="0+"),
        Field("host_filter", STRING, nullable="0+"),
        Field("operation", INT8),
        Field("permission_type", INT8),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("resources", Array("DescribeAclsResource", [
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("pattern_type", INT8, "1+", default=3),
            Field("acls", Array("AclDescription", [
                Field("principal", STRING),
                Field("host", STRING),
                Field("operation", INT8),
                Field("permission_type", INT8),
            ])),
        ])),
    ],
)
