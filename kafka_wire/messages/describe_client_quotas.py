"""DescribeClientQuotas (key 48): the client quotas set for user, client-id and ip entities (KIP-546).

Versions 0-1 (v1 is flexible). Each filter component names an entity type and a match type:
0 exact name, 1 the default entity, 2 any specified name. `strict` leaves out entities with
entity types the filter does not name.
"""

from ..schema import BOOL, FLOAT64, INT8, INT16, INT32, STRING, Api, Array, Field

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

API = Api(
    48, "DescribeClientQuotas", versions="0-1", flexible="1+",
    request=[
        Field("components", Array("ComponentData", [
            Field("entity_type", STRING),
            Field("match_type", INT8),
            Field("match", STRING, nullable="0+"),
        ])),
        Field("strict", BOOL),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("entries", Array("EntryData", [
            Field("entity", Array("EntityData", [
                Field("entity_type", STRING),
                Field("entity_name", STRING, nullable="0+"),
            ])),
            Field("values", Array("ValueData", [
                Field("key", STRING),
                Field("value", FLOAT64),
            ])),
        ]), nullable="0+"),
    ],
)
