"""Security: TLS listeners, SASL authentication, SCRAM credentials, and the ACL authorizer.

- `tls`: SSL contexts for SSL and SASL_SSL listeners from Kafka's ssl.* properties (PEM stores).
- `credentials`: the SCRAM credential store (salted and hashed, in the data directory).
- `authentication`: one connection's SASL exchange before it may send other requests.
- `authorizer`: Kafka's ACL semantics, CreateAcls/DescribeAcls/DeleteAcls storage, super.users.
- `delegation_tokens`: delegation tokens (KIP-48) and SCRAM logins with them.
"""

from __future__ import annotations


def attach(broker) -> None:
    """Give a Broker its credential store, authorizer and delegation tokens (`broker.credentials`,
    `broker.authorizer`, `broker.tokens`), all kept in its first data directory (a cluster broker's
    tokens are in ZooKeeper: it replaces `tokens` when it connects). Idempotent; the server calls
    it before listening."""
    from .authorizer import build_authorizer
    from .credentials import CredentialStore
    from .delegation_tokens import DelegationTokenManager, TokenFile

    data_dir = broker.config.log_dirs[0]
    if getattr(broker, "authorizer", None) is None:
        broker.authorizer = build_authorizer(broker.config, data_dir)
    if getattr(broker, "credentials", None) is None:
        broker.credentials = CredentialStore(data_dir)
    if getattr(broker, "tokens", None) is None:
        broker.tokens = DelegationTokenManager.from_config(broker.config, TokenFile(data_dir))
