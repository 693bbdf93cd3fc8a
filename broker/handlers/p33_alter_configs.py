"""AlterConfigs (33): replace a topic's config overrides, or a broker's dynamic configs (the
cluster-wide default broker "" or this broker's id; broker/dynamic_broker_config.py), or a
group's configs (broker/group_configs.py), with the given set.

Before anything else, as Kafka's broker does (ConfigAdminManager.preprocess, ahead of forwarding
to the controller, which authorizes): a resource named twice, a config key named twice in a
resource, or a null value answer INVALID_REQUEST.
"""

from __future__ import annotations

from collections import Counter

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from .. import dynamic_broker_config, group_configs
from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, config_resource_error
from ..topic_configs import BROKER, apply_topic_configs

API = APIS_BY_NAME["AlterConfigs"]


def _preprocess_error(resource, named: Counter) -> tuple[ErrorCode, str] | None:
    if named[(resource.resource_type, resource.resource_name)] > 1:
        return ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."
    if any(count > 1 for count in Counter(c.name for c in resource.configs).values()):
        return ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"
    nulls = [c.name for c in resource.configs if c.value is None]
    if nulls:
        return ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls)
    return None


async def handle(broker: BrokerView, ctx, request):
    responses = []
    named = Counter((r.resource_type, r.resource_name) for r in request.resources)
    for resource in request.resources:
        configs = {c.name: c.value for c in resource.configs}
        refused = _preprocess_error(resource, named)
        denied = None if refused else config_resource_error(broker.authorizer, ctx, AclOperation.ALTER_CONFIGS,
                                                            resource.resource_type, resource.resource_name)
        if refused:
            error, message = refused
        elif denied:
            error, message = denied, denied.message
        elif resource.resource_type == BROKER:
            error, message = dynamic_broker_config.alter(broker, resource.resource_name, configs,
                                                         request.validate_only)
        elif resource.resource_type == group_configs.GROUP:
            error, message = group_configs.alter(broker, resource.resource_name, configs, request.validate_only)
        else:
            error, message = apply_topic_configs(broker, resource.resource_type, resource.resource_name,
                                                 configs, request.validate_only)
        responses.append({"error_code": int(error), "error_message": message,
                          "resource_type": resource.resource_type,
                          "resource_name": resource.resource_name})
    return {"throttle_time_ms": 0, "responses": responses}
