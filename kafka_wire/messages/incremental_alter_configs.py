"""IncrementalAlterConfigs (key 44): set, delete, append to or subtract from single configs.

Versions 0-1: v1 is flexible. config_operation: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT.
"""

from ..schema import BOOL, INT16, INT32, INT8, STRING, Api, Array, Field

API = Api(
    44, "IncrementalAlterConfigs", versions="0-1", flexible="1+",
    request=[
        Field("resources", Array("AlterConfigsResource", [
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("configs", Array("AlterableConfig", [
                Field("name", STRING),
                Field("config_operation", INT8),
                Field("value", STRING, nullable="0+"),
            ])),
        ])),
        Field("validate_only", BOOL),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("responses", Array("AlterConfigsResourceResponse", [
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
            Field("resource_type", INT8),
            Field("resource_name", STRING),
        ])),
    ],
)
