"""AlterConfigs (key 33): replace the whole set of overridden configs of a resource.

Versions 0-2: v2 is flexible.
"""

from ..schema import BOOL, INT16, INT32, INT8, STRING, Api, Array, Field

API = Api(
    33, "AlterConfigs", versions="0-2", flexible="2+",
    request=[
        Field("resources", Array("AlterConfigsResource", [
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("configs", Array("AlterableConfig", [
                Field("name", STRING),
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
