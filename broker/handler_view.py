"""What a request handler may touch of the broker: `BrokerView`, the one interface between the
handlers (broker/handlers/) and the Broker (node.py) or a cluster's ClusterBroker behind it.

Handlers decode, check, act on shared state through this view, and answer. Anything a handler
(or a module it hands its broker to: leader hints, topic and broker configs, client quotas) uses of
the broker is declared here, and tests/unit/test_handler_view.py fails when a handler reaches for
a member that is not. A broker of another shape (a worker owning a share of the partitions, a
test's stand-in) serves the handlers by providing this, and nothing more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from coordinator.group_coordinator import GroupCoordinator
    from coordinator.transaction_coordinator import TransactionCoordinator
    from kafka_wire.errors import ErrorCode
    from log.log_manager import LogManager
    from log.partition_log import PartitionLog

    from .client_quotas import ClientQuotaManager
    from .cluster.partition_reassignment import Reassignment
    from .config import BrokerConfig
    from .features import FeatureUpdate
    from .fetch_sessions import FetchSessionCache
    from .metadata import MetadataStore, TopicMeta
    from .node import AppendResult, DataWaiters, PartitionRead
    from .security.authorizer import AllowEveryone, StandardAuthorizer
    from .security.credentials import CredentialStore
    from .security.delegation_tokens import DelegationTokenManager
    from .server import KafkaServer
    from .workers.runtime import WorkerRuntime

TopicPartition = tuple[str, int]


class ProducerIds(Protocol):
    def next(self) -> int: ...


class BrokerView(Protocol):
    """The broker as the handlers see it."""

    # -- what the broker is made of
    node_id: int
    config: BrokerConfig
    metadata: MetadataStore
    logs: LogManager
    waiters: DataWaiters
    fetch_sessions: FetchSessionCache
    producer_ids: ProducerIds
    groups: GroupCoordinator
    transactions: TransactionCoordinator
    authorizer: StandardAuthorizer | AllowEveryone
    credentials: CredentialStore
    tokens: DelegationTokenManager
    # None until client_quotas.managers makes them, on first use.
    client_quota_managers: dict[str, ClientQuotaManager] | None
    # The listeners, None until they are bound: dynamic broker configs move their connection limits.
    server: KafkaServer | None
    # This process's place among the broker's worker processes (broker/workers/), None with one process.
    workers: WorkerRuntime | None

    @property
    def waits_for_replicas(self) -> bool: ...

    # -- several worker processes (broker/workers/)

    async def logs_everywhere(self, topic: str) -> str | None: ...

    def undo_added_partitions(self, name: str, count: int) -> None: ...

    # -- the cluster

    def advertised_endpoint(self, listener: str) -> tuple[str, int]: ...

    def live_brokers(self, listener: str) -> list[tuple[int, str, int, str | None]]: ...

    def live_broker_ids(self) -> list[int]: ...

    def controller_id(self) -> int: ...

    def coordinator_for(self, key_type: int, key: str, listener: str) -> tuple[ErrorCode, int, str, int]: ...

    def elect_leaders(self, election_type: int, requested): ...

    def alter_partition_reassignments(self, requested, allow_replication_factor_change): ...

    def list_partition_reassignments(self, requested) -> dict[TopicPartition, Reassignment] | None: ...

    # -- feature flags

    def supported_features(self) -> dict[str, tuple[int, int]]: ...

    def finalized_features(self) -> tuple[dict[str, int], int]: ...

    def feature_level(self, name: str) -> int: ...

    def update_features(self, updates: list[FeatureUpdate], validate_only: bool) -> ErrorCode: ...

    # -- topics

    def topic_config(self, meta: TopicMeta) -> dict: ...

    def create_topic(self, name: str, partitions: int, replication_factor: int, configs: dict[str, object],
                     assignment: dict[int, list[int]] | None = None) -> TopicMeta: ...

    def auto_create_topic(self, name: str) -> TopicMeta | None: ...

    def delete_topic(self, name: str) -> TopicMeta: ...

    def add_partitions(self, name: str, total: int, assignment: list[list[int]] | None = None) -> None: ...

    def set_topic_configs(self, name: str, configs: dict[str, object]) -> None: ...

    # -- the data path

    def partition_log(self, topic: str, partition: int) -> PartitionLog | None: ...

    def leadership_error(self, topic: str, partition: int) -> ErrorCode: ...

    async def schema_subjects(self, schema_id: int, fresh: bool = False) -> list[tuple[str, list[str]]]: ...

    def append_records(self, topic: str, partition: int, records, *, transactional_id=None,
                       transaction_operation: int = ..., verification_guard=None) -> AppendResult: ...

    async def await_replication(self, partitions: list[TopicPartition], timeout_ms: int
                                ) -> dict[TopicPartition, ErrorCode]: ...

    # log.flush.on.ack: acknowledged appends wait for `await_synced` (log/group_commit.py).
    flush_on_ack: bool

    async def await_synced(self, partitions: list[TopicPartition]) -> dict[TopicPartition, ErrorCode]: ...

    # A coordinator's write: replicated (in a cluster) and synced (log.flush.on.ack), both at once.
    async def await_durable(self, partitions: list[TopicPartition], timeout_ms: int
                            ) -> dict[TopicPartition, ErrorCode]: ...

    def read_partition(self, topic: str, partition: int, offset: int, *, max_bytes: int, min_one: bool,
                       read_committed: bool, current_leader_epoch: int = -1, replica_id: int = -1
                       ) -> PartitionRead: ...

    def list_offset(self, topic: str, partition: int, timestamp: int, *, read_committed: bool,
                    current_leader_epoch: int = -1, from_consumer: bool = True) -> tuple[ErrorCode, int, int, int]: ...

    def end_offset_for_epoch(self, topic: str, partition: int, epoch: int, *,
                             current_leader_epoch: int = -1) -> tuple[ErrorCode, int, int]: ...

    def delete_records(self, topic: str, partition: int, offset: int) -> tuple[ErrorCode, int]: ...

    def write_txn_markers(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, committed: bool,
                          partitions, transaction_version: int = 0) -> dict[TopicPartition, ErrorCode]: ...
