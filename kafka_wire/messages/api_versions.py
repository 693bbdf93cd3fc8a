"""ApiVersions (key 18): the APIs and version ranges this broker serves, and its features.

Versions 0-4: v1 adds the throttle time, v3 is flexible (the request names the client software;
the answer carries supported and finalized features as tagged fields; up to v3, features whose
minimum version is 0 are left out), v4 lists those too (KAFKA-17011). Whatever the version, the response header is v0,
so that a client that does not know our versions yet can read it.
"""

from ..schema import BOOL, INT16, INT32, INT64, STRING, Api, Array, Field

API = Api(
    18, "ApiVersions", versions="0-4", flexible="3+",
    request=[
        Field("client_software_name", STRING, "3+"),
        Field("client_software_version", STRING, "3+"),
    ],
    response=[
        Field("error_code", INT16),
        Field("api_keys", Array("ApiVersion", [
            Field("api_key", INT16),
            Field("min_version", INT16),
            Field("max_version", INT16),
        ])),
        Field("throttle_time_ms", INT32, "1+"),
        Field("supported_features", Array("SupportedFeatureKey", [
            Field("name", STRING, "3+"),
            Field("min_version", INT16, "3+"),
            Field("max_version", INT16, "3+"),
        ]), "3+", tag=0),
        Field("finalized_features_epoch", INT64, "3+", tag=1, default=-1),
        Field("finalized_features", Array("FinalizedFeatureKey", [
            Field("name", STRING, "3+"),
            Field("max_version_level", INT16, "3+"),
            Field("min_version_level", INT16, "3+"),
        ]), "3+", tag=2),
        Field("zk_migration_ready", BOOL, "3+", tag=3, default=False),
    ],
)
