"""ListGroups (key 16): the groups a broker coordinates.

Versions 0-5: v3 is flexible, v4 filters by group state (KIP-518), v5 by group type (KIP-848).
"""

from ..schema import INT16, INT32, STRING, Api, Array, Field

API = Api(
    16, "ListGroups", versions="0-5", flexible="3+",
    request=[
        Field("states_filter", Array(STRING), "4+"),
        Field("types_filter", Array(STRING), "5+"),
    ],
    response=[
        Field("throttle_time_ms", INT32, "1+"),
        Field("error_code", INT16),
        Field("groups", Array("ListedGroup", [
            Field("group_id", STRING),
            Field("protocol_type", STRING),
            Field("group_state", STRING, "4+"),
            Field("group_type", STRING, "5+"),
        ])),
    ],
)
