"""DescribeConfigs (key 32): topic and broker configs with their sources and synonyms.

Versions 1-4 (v0 was removed in Kafka 4.0): v1 adds synonyms and config sources, v3 the config type
and documentation, v4 is flexible.
"""

from ..schema import BOOL, INT16, INT32, INT8, STRING, Api, Array, Field

API = Api(
    32, "DescribeConfigs", versions="1-4", flexible="4+",
    request=[
        Field("resources", Array("DescribeConfigsResource", [
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("configuration_keys", Array(STRING), nullable="0+"),
        ])),
        Field("include_synonyms", BOOL, "1+"),
        Field("include_documentation", BOOL, "3+"),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("results", Array("DescribeConfigsResult", [
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("configs", Array("DescribeConfigsResourceResult", [
                Field("name", STRING),
                Field("value", STRING, nullable="0+"),
                Field("read_only", BOOL),
                Field("config_source", INT8, "1+", default=-1),
                Field("is_sensitive", BOOL),
                Field("synonyms", Array("DescribeConfigsSynonym", [
                    Field("name", STRING, "1+"),
                    Field("value", STRING, "1+", nullable="0+"),
                    Field("source", INT8, "1+"),
                ]), "1+"),
                Field("config_type", INT8, "3+"),
                Field("documentation", STRING, "3+", nullable="0+"),
            ])),
        ])),
    ],
)
