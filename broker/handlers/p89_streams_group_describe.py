"""StreamsGroupDescribe (89): topology, epochs, members and task assignments of KIP-1071 streams
groups. A group of another type (or an unknown group id) answers GROUP_ID_NOT_FOUND, as Kafka does;
with the finalized streams.version below 1 every group answers UNSUPPORTED_VERSION.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..features import STREAMS_VERSION
from ..handler_view import BrokerView
from .p69_consumer_group_describe import describe_groups

API = APIS_BY_NAME["StreamsGroupDescribe"]


async def handle(broker: BrokerView, ctx, request):
    def coordinator():
        groups = getattr(broker, "groups", None)
        if groups is None:
            return None, ErrorCode.COORDINATOR_NOT_AVAILABLE
        return groups.streams_group_describe, None

    return describe_groups(broker, ctx, request, STREAMS_VERSION, coordinator)
