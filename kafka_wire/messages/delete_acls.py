"""DeleteAcls (key 31): remove the ACL bindings matching each filter; returns what each removed.

Versions 1-3 (v0 was removed in Kafka 4.0); flexible from v2.
"""

from ..schema import INT8, INT16, INT32, STRING, Api, Array, Field

API = Api(
    31, "DeleteAcls", versions="1-3", flexible="2+",
    request=[
        Field("filters", Array("DeleteAclsFilter", [
            Field("resource_type_filter", INT8),
            Field("resource_name_filter", STRING, nullable="0+"),
            Field("pattern_type_filter", INT8, "1+", default=3),
            Field("principal_filter", STRING, nullable="0+"),
            Field("host_filter", STRING, nullable="0+"),
            Field("operation", INT8),
            Field("permission_type", INT8),
        ])),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("filter_results", Array("DeleteAclsFilterResult", [
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
            Field("matching_acls", Array("DeleteAclsMatchingAcl", [
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+"),
                Field("resource_type", INT8),
                Field("resource_name", STRING),
                Field("pattern_type", INT8, "1+", default=3),
                Field("principal", STRING),
                Field("host", STRING),
                Field("operation", INT8),
                Field("permission_type", INT8),
            ])),
        ])),
    ],
)
