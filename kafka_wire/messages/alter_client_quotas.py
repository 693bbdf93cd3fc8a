"""AlterClientQuotas (key 49): set or remove client quotas of user, client-id and ip entities (KIP-546).

Versions 0-1 (v1 is flexible). A null entity name is the default entity of its type.
"""

from ..schema import BOOL, FLOAT64, INT16, INT32, STRING, Api, Array, Field

API = Api(
    49, "AlterClientQuotas", versions="0-1", flexible="1+",
    request=[
        Field("entries", Array("EntryData", [
            Field("entity", Array("EntityData", [
                Field("entity_type", STRING),
                Field("entity_name", STRING, nullable="0+"),
            ])),
            Field("ops", Array("OpData", [
                Field("key", STRING),
                Field("value", FLOAT64),
                Field("remove", BOOL),
            ])),
        ])),
        Field("validate_only", BOOL),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("entries", Array("EntryData", [
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
            Field("entity", Array("EntityData", [
                Field("entity_type", STRING),
                Field("entity_name", STRING, nullable="0+"),
            ])),
        ])),
    ],
)
