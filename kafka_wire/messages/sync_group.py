"""SyncGroup (key 14): the leader hands in the assignment; every member receives its own.

Versions 0-5: v3 adds static membership, v4 is flexible, v5 adds the protocol type and name.
"""

from ..schema import BYTES, INT16, INT32, STRING, Api, Array, Field

API = Api(
    14, "SyncGroup", versions="0-5", flexible="4+",
    request=[
        Field("group_id", STRING),
        Field("generation_id", INT32),
        Field("member_id", STRING),
        Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
        Field("protocol_type", STRING, "5+", nullable="5+", default=None),
        Field("protocol_name", STRING, "5+", nullable="5+", default=None),
        Field("assignments", Array("SyncGroupRequestAssignment", [
            Field("member_id", STRING),
            Field("assignment", BYTES),
        ])),
    ],
    response=[
        Field("throttle_time_ms", INT32, "1+"),
        Field("error_code", INT16),
        Field("protocol_type", STRING, "5+", nullable="5+", default=None),
        Field("protocol_name", STRING, "5+", nullable="5+", default=None),
        Field("assignment", BYTES),
    ],
)
