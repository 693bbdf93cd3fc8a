"""DeleteTopics (key 20): delete topics.

Versions 1-6: v4 is flexible, v5 adds an error message per topic (KIP-599), v6 names topics by name
or topic id (`topics` replaces `topic_names`).
"""

from ..schema import INT16, INT32, STRING, UUID, Api, Array, Field

API = Api(
    20, "DeleteTopics", versions="1-6", flexible="4+",
    request=[
        Field("topics", Array("DeleteTopicState", [
            Field("name", STRING, "6+", nullable="6+", default=None),
            Field("topic_id", UUID, "6+"),
        ]), "6+"),
        Field("topic_names", Array(STRING), "0-5"),
        Field("timeout_ms", INT32),
    ],
    response=[
        Field("throttle_time_ms", INT32, "1+"),
        Field("responses", Array("DeletableTopicResult", [
            Field("name", STRING, nullable="6+"),
            Field("topic_id", UUID, "6+"),
            Field("error_code", INT16),
            Field("error_message", STRING, "5+", nullable="5+", default=None),
        ])),
    ],
)
