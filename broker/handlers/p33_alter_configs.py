"""AlterConfigs (33): replace a topic's config overrides, or a broker's dynamic configs (the
cluster-wide default broker "" or this broker's id; broker/dynamic_broker_config.py), with the
given set."""

from __future__ import annotations

from kafka_wire.messages import APIS_BY_NAME

from .. import dynamic_broker_config
from ..security.authorizer import AclOperation, config_resource_error
from ..topic_configs import BROKER, apply_topic_configs

API = APIS_BY_NAME["AlterConfigs"]


async def handle(broker, ctx, request):
    responses = []
    for resource in request.resources:
        configs = {c.name: c.value for c in resource.configs}
        denied = config_resource_error(broker.authorizer, ctx, AclOperation.ALTER_CONFIGS,
                                       resource.resource_type, resource.resource_name)
        if denied:
            error, message = denied, denied.message
        elif resource.resource_type == BROKER:
            error, message = dynamic_broker_config.alter(broker, resource.resource_name, configs,
                                                         request.validate_only)
        else:
            error, message = apply_topic_configs(broker, resource.resource_type, resource.resource_name,
                                                 configs, request.validate_only)
        responses.append({"error_code": int(error), "error_message": message,
                          "resource_type": resource.resource_type,
                          "resource_name": resource.resource_name})
    return {"throttle_time_ms": 0, "responses": responses}
