"""FindCoordinator (key 10): which broker coordinates a group or a transactional id.

Versions 0-6: v1 adds the key type (0 group, 1 transaction) and an error message, v3 is flexible,
v4 asks for several keys at once (`coordinator_keys`) and answers one `coordinators` entry per key,
v5 may answer TRANSACTION_ABORTABLE (KIP-890), v6 adds key type 2, a share group's state
("groupId:topicId:partition", KIP-932). v5 and v6 are v4's bytes.
"""

from ..schema import INT16, INT32, INT8, STRING, Api, Array, Field

API = Api(
    10, "FindCoordinator", versions="0-6", flexible="3+",
    request=[
        Field("key", STRING, "0-3"),
        Field("key_type", INT8, "1+"),
        Field("coordinator_keys", Array(STRING), "4+"),
    ],
    response=[
        Field("throttle_time_ms", INT32, "1+"),
        Field("error_code", INT16, "0-3"),
        Field("error_message", STRING, "1-3", nullable="1-3"),
        Field("node_id", INT32, "0-3"),
        Field("host", STRING, "0-3"),
        Field("port", INT32, "0-3"),
        Field("coordinators", Array("Coordinator", [
            Field("key", STRING, "4+"),
            Field("node_id", INT32, "4+"),
            Field("host", STRING, "4+"),
            Field("port", INT32, "4+"),
            Field("error_code", INT16, "4+"),
            Field("error_message", STRING, "4+", nullable="4+"),
        ]), "4+"),
    ],
)
