"""KIP-951 leader hints: the current leader of a partition and where to reach it, which Produce
(v10+) and Fetch (v16+) answers carry beside NOT_LEADER_OR_FOLLOWER (Fetch also beside
FENCED_LEADER_EPOCH), so a client can move to the new leader without a Metadata round trip.

As Kafka's KafkaApis.getCurrentLeader: the leader id and epoch this broker's metadata knows, and
the leader's endpoint on the listener the client used, only when that leader is alive.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode


class LeaderHints:
    """Collects the node endpoints of the leaders named in one response."""

    def __init__(self, broker, listener: str) -> None:
        self.broker = broker
        self.listener = listener
        self._endpoints: dict[int, dict] = {}

    def current_leader(self, topic: str, partition: int) -> dict:
        """{"leader_id", "leader_epoch"} of the partition (-1s when unknown); remembers the
        leader's endpoint for `node_endpoints`."""
        state = self.broker.metadata.partition_state(topic, partition)
        if state is None:
            return {"leader_id": -1, "leader_epoch": -1}
        if state.leader >= 0 and state.leader not in self._endpoints:
            for node_id, host, port, rack in self.broker.live_brokers(self.listener):
                if node_id == state.leader:
                    self._endpoints[node_id] = {"node_id": node_id, "host": host, "port": port, "rack": rack}
        return {"leader_id": state.leader, "leader_epoch": state.leader_epoch}

    def annotate(self, topic: str, partition: int, entry: dict, errors=(ErrorCode.NOT_LEADER_OR_FOLLOWER,)) -> None:
        """Set `current_leader` on a partition's answer whose error is one of `errors`."""
        if entry["error_code"] in errors:
            entry["current_leader"] = self.current_leader(topic, partition)

    def node_endpoints(self) -> list[dict]:
        return list(self._endpoints.values())
