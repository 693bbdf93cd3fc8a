"""DeleteGroups (key 42): delete empty groups and their committed offsets.

Versions 0-2: v2 is flexible.
"""

from ..schema import INT16, INT32, STRING, Api, Array, Field

API = Api(
    42, "DeleteGroups", versions="0-2", flexible="2+",
    request=[
        Field("groups_names", Array(STRING)),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("results", Array("DeletableGroupResult", [
            Field("group_id", STRING),
            Field("error_code", INT16),
        ])),
    ],
)
