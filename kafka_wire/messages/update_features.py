"""UpdateFeatures (key 57): upgrade, downgrade or disable finalized feature levels (KIP-584, kafka-features.sh).

Versions 0-2, all flexible. v0 says a downgrade with `allow_downgrade`; v1 replaces it with the
upgrade type (1 upgrade, 2 safe downgrade, 3 unsafe downgrade) and adds `validate_only` (--dry-run);
v2 answers with the top-level error only (no per-feature results). The error messages default to ""
as in Kafka's generated classes; Kafka's controller answers null for a success.
"""

from ..schema import BOOL, INT8, INT16, INT32, STRING, Api, Array, Field

API = Api(
    57, "UpdateFeatures", versions="0-2", flexible="0+",
    request=[
        Field("timeout_ms", INT32, default=60000),
        Field("feature_updates", Array("FeatureUpdateKey", [
            Field("feature", STRING),
            Field("max_version_level", INT16),
            Field("allow_downgrade", BOOL, "0"),
            Field("upgrade_type", INT8, "1+", default=1),
        ])),
        Field("validate_only", BOOL, "1+", default=False),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("results", Array("UpdatableFeatureResult", [
            Field("feature", STRING),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
        ]), "0-1", ignorable=True),
    ],
)
