"""Connections to a whole cluster: bootstrap, then the partition leader's or the coordinator's broker."""

from __future__ import annotations

import time

from kafka_wire.errors import ErrorCode

from .security import ClientSecurity
from .wire_client import GROUP_KEY_TYPE, KafkaError, WireClient


class ClusterClient:
    """Connections to a cluster: bootstrap from a list of addresses, then one connection per broker
    that Metadata names, for requests that must go to a partition's leader or a group's coordinator."""

    def __init__(self, bootstrap_servers: str, timeout: float = 10.0, client_id: str = "kafka-wire-client",
                 security: ClientSecurity | None = None) -> None:
        self.bootstrap = [a.strip() for a in bootstrap_servers.split(",") if a.strip()]
        if not self.bootstrap:
            raise ValueError("no bootstrap server given")
        self.timeout = timeout
        self.client_id = client_id
        self.security = security
        self.brokers: dict[int, str] = {}  # node id -> "host:port", from the latest Metadata
        self.controller_id = -1
        self.cluster_id: str | None = None
        self._connections: dict[int | str, WireClient] = {}
        self._bootstrap_client: WireClient | None = None

    def close(self) -> None:
        for client in self._connections.values():
            client.close()
        self._connections.clear()
        self._bootstrap_client = None

    def __enter__(self) -> ClusterClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _connect(self, address: str) -> WireClient:
        return WireClient(address, timeout=self.timeout, client_id=self.client_id, security=self.security)

    def any_broker(self) -> WireClient:
        """A connection to some broker: the first bootstrap address that answers."""
        if self._bootstrap_client is not None and not self._bootstrap_client.closed:
            return self._bootstrap_client
        errors = []
        for address in self.bootstrap:
            try:
                client = self._connect(address)
            except OSError as error:
                errors.append(f"{address}: {error}")
                continue
            self._connections[address] = client
            self._bootstrap_client = client
            return client
        raise ConnectionError("no bootstrap server reachable (" + "; ".join(errors) + ")")

    def broker(self, node_id: int) -> WireClient:
        """A connection to the broker with this node id (Metadata says where it is)."""
        client = self._connections.get(node_id)
        if client is not None and not client.closed:
            return client
        # A broker named as a leader may not be in the broker list we hold, or (a cluster still
        # forming) in the one the bootstrap broker holds: refresh until it is, or time runs out.
        deadline = time.monotonic() + self.timeout
        while node_id not in self.brokers:
            self.metadata([])
            if node_id in self.brokers:
                break
            if time.monotonic() >= deadline:
                raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"node {node_id}")
            time.sleep(0.2)
        address = self.brokers[node_id]
        client = self._connect(address)
        self._connections[node_id] = client
        return client

    def metadata(self, topics: list[str] | None = None, *, allow_auto_topic_creation: bool = False):
        """Metadata for these topics (None: all of them); refreshes the broker list."""
        client = self.any_broker()
        version = client.version_for("Metadata", lowest=1)
        body = {"topics": None if topics is None else [{"name": t} for t in topics],
                "allow_auto_topic_creation": allow_auto_topic_creation}
        response = client.call("Metadata", version, body)
        self.brokers = {b.node_id: f"{_bracket(b.host)}:{b.port}" for b in response.brokers}
        self.controller_id = response.controller_id
        self.cluster_id = response.cluster_id
        return response

    def controller(self) -> WireClient:
        """Where admin requests go (ZooKeeper-mode Kafka needs the controller; KRaft forwards)."""
        if self.controller_id < 0:
            self.metadata([])
        if self.controller_id < 0:
            return self.any_broker()
        return self.broker(self.controller_id)

    def partition_leaders(self, topic: str) -> dict[int, int]:
        """partition -> leader node id for a topic; KafkaError when the topic has an error."""
        response = self.metadata([topic])
        for entry in response.topics:
            if entry.name == topic:
                if entry.error_code:
                    raise KafkaError(entry.error_code, f"topic {topic}")
                return {p.partition_index: p.leader_id for p in entry.partitions}
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic}")

    def leader(self, topic: str, partition: int) -> WireClient:
        leaders = self.partition_leaders(topic)
        if partition not in leaders:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition}")
        if leaders[partition] < 0:
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{partition}")
        return self.broker(leaders[partition])

    def list_offsets(self, partitions, timestamp: int, *, isolation_level: int = 0) -> dict[tuple[str, int], int]:
        """ListOffsets for (topic, partition)s, each asked of its leader: EARLIEST (-2), LATEST (-1)
        or a timestamp. Returns {(topic, partition): offset} (-1 when no offset matches)."""
        by_leader: dict[int, dict[str, list[int]]] = {}
        leaders_of: dict[str, dict[int, int]] = {}
        for topic, partition in partitions:
            if topic not in leaders_of:
                leaders_of[topic] = self.partition_leaders(topic)
            leader = leaders_of[topic].get(partition)
            if leader is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition}")
            by_leader.setdefault(leader, {}).setdefault(topic, []).append(partition)
        offsets: dict[tuple[str, int], int] = {}
        for leader, topics in by_leader.items():
            client = self.broker(leader)
            body = {"replica_id": -1, "isolation_level": isolation_level, "topics": [
                {"name": topic, "partitions": [{"partition_index": p, "timestamp": timestamp} for p in parts]}
                for topic, parts in topics.items()]}
            response = client.request("ListOffsets", body, lowest=1)
            for topic in response.topics:
                for part in topic.partitions:
                    if part.error_code:
                        raise KafkaError(part.error_code, f"ListOffsets {topic.name}-{part.partition_index}")
                    offsets[(topic.name, part.partition_index)] = part.offset
        return offsets

    def coordinator(self, key: str, key_type: int = GROUP_KEY_TYPE, timeout: float | None = None) -> WireClient:
        """A connection to the coordinator of a group (or a transactional id)."""
        return self.broker(self.find_coordinator(key, key_type, timeout))

    def find_coordinator(self, key: str, key_type: int = GROUP_KEY_TYPE, timeout: float | None = None) -> int:
        """The node id of a group's (or transactional id's) coordinator; retries while the cluster
        says the coordinator is not available yet or still loading, up to `timeout` seconds."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            client = self.any_broker()
            version = client.version_for("FindCoordinator")
            response = client.call("FindCoordinator", version,
                                   {"key": key, "key_type": key_type, "coordinator_keys": [key]})
            if version >= 4:
                found = response.coordinators[0]
                error, node_id, host, port = found.error_code, found.node_id, found.host, found.port
            else:
                error, node_id, host, port = response.error_code, response.node_id, response.host, response.port
            if error == ErrorCode.NONE:
                self.brokers[node_id] = f"{_bracket(host)}:{port}"
                return node_id
            if not ErrorCode.from_code(error).retriable or time.monotonic() >= deadline:
                raise KafkaError(error, f"FindCoordinator {key}")
            time.sleep(0.2)


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host
