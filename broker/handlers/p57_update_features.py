"""UpdateFeatures (57): kafka-features.sh upgrade / downgrade / disable, Admin.updateFeatures.

As Kafka's ControllerApis.handleUpdateFeatures and QuorumController.updateFeatures: ALTER on
CLUSTER is required (CLUSTER_AUTHORIZATION_FAILED); the updates are checked in the request's order
and applied all or none (broker/features.py has the checks and their messages); one invalid update
fails the request with INVALID_UPDATE_VERSION "The update failed for all features since the
following feature had an error: ...". `validate_only` (v1+, --dry-run) checks without applying.
v0 says a downgrade with `allow_downgrade`; v0-1 answer a result per feature on success, v2 only
the top-level error. In cluster mode the controller applies it; other brokers answer NOT_CONTROLLER
(the Admin client then asks the controller named in Metadata), as Kafka's ZooKeeper mode did.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..features import SAFE_DOWNGRADE, UPGRADE, FeatureUpdate, InvalidFeatureUpdate
from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["UpdateFeatures"]


def _answer(error: ErrorCode, message: str | None, results: list | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": message, "results": results or []}


async def handle(broker: BrokerView, ctx, request):
    if not broker.authorizer.authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return _answer(error, error.message)
    updates = [FeatureUpdate(u.feature, u.max_version_level,
                             (SAFE_DOWNGRADE if u.allow_downgrade else UPGRADE) if ctx.api_version == 0
                             else u.upgrade_type)
               for u in request.feature_updates]
    validate_only = ctx.api_version >= 1 and request.validate_only
    try:
        error = broker.update_features(updates, validate_only)
    except InvalidFeatureUpdate as invalid:
        return _answer(invalid.error, "The update failed for all features since the following feature had "
                                      f"an error: {invalid}")
    if error != ErrorCode.NONE:
        return _answer(error, error.message)
    # Kafka's per-feature results carry Errors.NONE.message(), which is "NONE".
    return _answer(ErrorCode.NONE, None, [{"feature": u.feature, "error_code": 0, "error_message": "NONE"}
                                          for u in request.feature_updates])
