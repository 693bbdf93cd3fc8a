"""IncrementalAlterConfigs (44): SET, DELETE, APPEND and SUBTRACT on a topic's overrides, on a
broker's dynamic configs (the default broker "" or this broker's id; broker/dynamic_broker_config.py),
SET and DELETE on this broker's log levels (broker/broker_loggers.py) or on a group's configs
(broker/group_configs.py)."""

from __future__ import annotations

from kafka_wire.messages import APIS_BY_NAME

from .. import broker_loggers, dynamic_broker_config, group_configs
from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, config_resource_error
from ..topic_configs import BROKER, TOPIC, ConfigChangeError, apply_topic_configs, incremental_changes

API = APIS_BY_NAME["IncrementalAlterConfigs"]
BROKER_LOGGER = 8


async def handle(broker: BrokerView, ctx, request):
    responses = []
    for resource in request.resources:
        denied = config_resource_error(broker.authorizer, ctx, AclOperation.ALTER_CONFIGS,
                                       resource.resource_type, resource.resource_name)
        if denied:
            responses.append({"error_code": int(denied), "error_message": denied.message,
                              "resource_type": resource.resource_type, "resource_name": resource.resource_name})
            continue
        if resource.resource_type in (BROKER, BROKER_LOGGER, group_configs.GROUP):
            alter = {BROKER: dynamic_broker_config.incremental_alter, BROKER_LOGGER: broker_loggers.alter,
                     group_configs.GROUP: group_configs.incremental_alter}[resource.resource_type]
            error, message = alter(broker, resource.resource_name, resource.configs, request.validate_only)
            responses.append({"error_code": int(error), "error_message": message,
                              "resource_type": resource.resource_type, "resource_name": resource.resource_name})
            continue
        try:
            new = (incremental_changes(broker, resource.resource_name, resource.configs)
                   if resource.resource_type == TOPIC and broker.metadata.topic(resource.resource_name)
                   else {})
        except ConfigChangeError as exc:
            error, message = exc.error, exc.message
        else:
            error, message = apply_topic_configs(broker, resource.resource_type, resource.resource_name,
                                                 new, request.validate_only)
        responses.append({"error_code": int(error), "error_message": message,
                          "resource_type": resource.resource_type,
                          "resource_name": resource.resource_name})
    return {"throttle_time_ms": 0, "responses": responses}
