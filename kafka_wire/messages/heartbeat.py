"""Heartbeat (key 12): a member tells the coordinator it is alive and learns of rebalances.

Versions 0-4: v1 adds the throttle time, v3 static membership, v4 is flexible.
"""

from ..schema import INT16, INT32, STRING, Api, Field

API = Api(
    12, "Heartbeat", versions="0-4", flexible="4+",
    request=[
        Field("group_id", STRING),
        Field("generation_id", INT32),
        Field("member_id", STRING),
        Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
    ],
    response=[
        Field("throttle_time_ms", INT32, "1+"),
        Field("error_code", INT16),
    ],
)
