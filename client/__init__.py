"""Our own small blocking Kafka client: one connection (WireClient), a whole cluster
(ClusterClient), secured listeners (ClientSecurity), the default partitioner.

The CLI tools, the compatibility suites, the benchmarks and the tests use it to send exact
requests; it speaks only through kafka_wire and knows nothing of the broker.
"""

from .cluster_client import ClusterClient
from .partitioner import murmur2, partition_for_key
from .security import ClientConfigError, ClientSecurity, client_ssl_context, jaas_credentials
from .wire_client import (
    API_VERSIONS,
    EARLIEST_TIMESTAMP,
    GROUP_KEY_TYPE,
    LATEST_TIMESTAMP,
    TRANSACTION_KEY_TYPE,
    AuthenticationFailed,
    ConnectionClosed,
    KafkaError,
    UnsupportedVersion,
    WireClient,
    split_address,
)

__all__ = [
    "API_VERSIONS", "EARLIEST_TIMESTAMP", "GROUP_KEY_TYPE", "LATEST_TIMESTAMP", "TRANSACTION_KEY_TYPE",
    "AuthenticationFailed", "ClientConfigError", "ClientSecurity", "ClusterClient", "ConnectionClosed",
    "KafkaError", "UnsupportedVersion", "WireClient", "client_ssl_context", "jaas_credentials", "murmur2",
    "partition_for_key", "split_address",
]
