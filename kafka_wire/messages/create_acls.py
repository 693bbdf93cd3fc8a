"""CreateAcls (key 30): add ACL bindings (resource pattern, principal, host, operation, permission).

Versions 1-3 (v0, without a pattern type, was removed in Kafka 4.0); flexible from v2.
"""

from ..schema import INT8, INT16, INT32, STRING, Api, Array, Field

API = Api(
    30, "CreateAcls", versions="1-3", flexible="2+",
    request=[
        Field("creations", Array("AclCreation", [
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("resource_pattern_type", INT8, "1+", default=3),
            Field("principal", STRING),
            Field("host", STRING),
            Field("operation", INT8),
            Field("permission_type", INT8),
        ])),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("results", Array("AclCreationResult", [
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
        ])),
    ],
)
