"""What the server needs per listener and per client address: its security protocol, TLS context,
SASL setup and principal, and Kafka's connection quotas.

A listener's security protocol comes from `listener.security.protocol.map` (`CLIENT:SASL_SSL`);
a listener named after a protocol (SASL_SSL://...) maps to it. Per-listener settings use Kafka's
`listener.name.<listener>.<key>` prefix (`listener.name.client.sasl.enabled.mechanisms=PLAIN`).
"""

from __future__ import annotations

import logging
import ssl
from collections import Counter
from dataclasses import dataclass

from ..config import ConfigError
from .authentication import SaslAuthenticator
from .authorizer import ANONYMOUS
from .tls import (SslPrincipalMapper, listener_setting, principal_from_certificate, reconfigure_context,
                  server_context)

logger = logging.getLogger("kafka_wire.security")

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass
class ListenerSecurity:
    """One listener's security: TLS context (SSL, SASL_SSL) and SASL settings (SASL_*)."""

    name: str
    protocol: str
    ssl_context: ssl.SSLContext | None = None
    mechanisms: tuple[str, ...] = ()
    principal_mapper: SslPrincipalMapper | None = None
    max_receive_size: int = 524288
    failure_delay_ms: int = 100

    def update(self, config) -> None:
        """Take the listener's TLS and SASL settings from `config` again (a dynamic broker config
        change): new connections get them, running ones keep theirs. An empty sasl.enabled.mechanisms
        is taken as Kafka takes it: every mechanism a client asks for is then refused. Raises
        ConfigError (a store that cannot be loaded), the listener unchanged."""
        if self.ssl_context is not None:
            reconfigure_context(self.ssl_context, config, self.name, self.protocol)
        if self.uses_sasl:
            self.mechanisms = tuple(listener_setting(config, self.name, "sasl.enabled.mechanisms") or ())

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    def authenticator(self, credentials, api_versions_supported, connection: str,
                      tokens=None) -> SaslAuthenticator | None:
        """A fresh SASL exchange for a new connection, or None on a listener without SASL."""
        if not self.uses_sasl:
            return None
        return SaslAuthenticator(list(self.mechanisms), credentials, api_versions_supported=api_versions_supported,
                                 max_receive_size=self.max_receive_size,
                                 failed_authentication_delay_ms=self.failure_delay_ms, connection=connection,
                                 tokens=tokens)

    def transport_principal(self, transport) -> str:
        """The principal a connection has before (or without) SASL: on an SSL listener the client
        certificate's mapped name; else User:ANONYMOUS. Raises PrincipalMappingError when no
        ssl.principal.mapping.rules rule applies (the connection is refused)."""
        if self.protocol != "SSL":
            return ANONYMOUS
        return principal_from_certificate(transport.get_extra_info("peercert"), self.principal_mapper) or ANONYMOUS


def security_protocol(config, name: str) -> str | None:
    """The listener's protocol from listener.security.protocol.map (names compare case-blind, as
    Kafka normalises them); a listener named after a protocol needs no entry."""
    for entry in config["listener.security.protocol.map"]:
        listener, _, protocol = entry.partition(":")
        if listener.strip().upper() == name.upper():
            return protocol.strip().upper()
    return name.upper() if name.upper() in PROTOCOLS else None


def listener_security(config, name: str) -> ListenerSecurity:
    protocol = security_protocol(config, name)
    if protocol not in PROTOCOLS:
        raise ConfigError(f"No security protocol defined for listener {name} (listener.security.protocol.map)")
    security = ListenerSecurity(name, protocol)
    if protocol in ("SSL", "SASL_SSL"):
        security.ssl_context = server_context(config, name, protocol)
        security.principal_mapper = SslPrincipalMapper(listener_setting(config, name, "ssl.principal.mapping.rules"))
    if security.uses_sasl:
        mechanisms = listener_setting(config, name, "sasl.enabled.mechanisms")
        if not mechanisms:
            raise ConfigError(f"listener {name} ({protocol}) has no sasl.enabled.mechanisms")
        security.mechanisms = tuple(mechanisms)
        security.max_receive_size = int(listener_setting(config, name, "sasl.server.max.receive.size"))
        security.failure_delay_ms = int(config.get("connection.failed.authentication.delay.ms"))
    return security


class ConnectionQuotas:
    """Kafka's `max.connections`, `max.connections.per.ip` and `max.connections.per.ip.overrides`
    (`host:count,host:count`): a connection over a limit is closed as soon as it is accepted."""

    def __init__(self, config, shared=None) -> None:
        # With several workers, counts shared by all of them (broker/workers/connection_counts.py).
        self.shared = shared
        self.max_connections = int(config.get("max.connections"))
        self.max_per_ip = int(config.get("max.connections.per.ip"))
        self.overrides: dict[str, int] = {}
        for item in (config.get("max.connections.per.ip.overrides") or "").split(","):
            if not item.strip():
                continue
            host, sep, count = item.strip().rpartition(":")
            try:
                self.overrides[host.strip("[]")] = int(count)
            except ValueError:
                raise ConfigError(f"Invalid value {item} for configuration max.connections.per.ip.overrides") from None
        self.total = 0
        self.per_ip: Counter = Counter()

    def open(self, host: str) -> str | None:
        """Count a new connection from `host`; returns why it must be refused, or None."""
        limit = self.overrides.get(host, self.max_per_ip)
        if self.shared is not None:
            return self.shared.open(host, limit, self.max_connections)
        if self.per_ip[host] >= limit:
            return f"{host} already has {self.per_ip[host]} connections (max.connections.per.ip={limit})"
        if self.total >= self.max_connections:
            return f"the broker has {self.total} connections (max.connections={self.max_connections})"
        self.per_ip[host] += 1
        self.total += 1
        return None

    def close(self, host: str) -> None:
        if self.shared is not None:
            self.shared.close(host)
            return
        self.total -= 1
        self.per_ip[host] -= 1
        if self.per_ip[host] <= 0:
            del self.per_ip[host]
