"""TLS of the Schema Registry: the server side of its HTTPS listener (the broker's key store) and
the client side of HTTPS between the registries of a cluster (registry/cluster.py), both from the
broker's ssl.* settings as a listener named SCHEMA_REGISTRY reads them
(`listener.name.schema_registry.ssl.*` first, then the broker-wide keys)."""

from __future__ import annotations

import ssl

from broker.config import ConfigError
from client.security import ClientConfigError, client_ssl_context
from broker.security.tls import listener_setting, server_context

REGISTRY_LISTENER = "SCHEMA_REGISTRY"  # the listener name its listener.name.<name>.ssl.* settings use


def registry_tls_context(config):
    """HTTPS when the broker has a key store (ssl.keystore.location, or the registry's own
    listener.name.schema_registry.ssl.keystore.location): the broker's TLS settings, as its SSL
    listeners use them (protocols, ciphers, trust store, ssl.client.auth), read under the listener
    name SCHEMA_REGISTRY; None: plain HTTP."""
    if listener_setting(config, REGISTRY_LISTENER, "ssl.keystore.location") is None:
        return None
    return server_context(config, REGISTRY_LISTENER, "SSL")


def forwarding_tls_context(config) -> ssl.SSLContext:
    """The client side of HTTPS between registries: the broker's TLS settings for the registry
    listener (SCHEMA_REGISTRY) read as a Kafka client reads its ssl.* settings, by the client's own
    loader (client.security.client_ssl_context: trust store, key store for client authentication,
    host name check, protocols). Raises ConfigError for stores that do not load."""
    props = {}
    for key in ("ssl.truststore.location", "ssl.truststore.certificates", "ssl.keystore.location",
                "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.key.password",
                "ssl.keystore.password", "ssl.endpoint.identification.algorithm"):
        value = listener_setting(config, REGISTRY_LISTENER, key)
        props[key] = "" if value is None else str(value)
    protocols = listener_setting(config, REGISTRY_LISTENER, "ssl.enabled.protocols")
    if protocols:
        props["ssl.enabled.protocols"] = ",".join(protocols)
    try:
        return client_ssl_context(props)
    except ClientConfigError as exc:
        raise ConfigError(f"the Schema Registry's TLS settings for forwarding do not load: {exc}") from None


def exporter_tls_context(config: dict[str, str]) -> ssl.SSLContext:
    """The client side of HTTPS to an exporter's destination registry (registry/exporters.py): its
    config's `schema.registry.ssl.*` keys, as Confluent's registry clients name them, read by the
    Kafka client's loader (`schema.registry.ssl.truststore.location` a PEM file; none: the system's
    CAs). Raises ConfigError for stores that do not load."""
    prefix = "schema.registry."
    props = {key[len(prefix):]: value for key, value in config.items() if key.startswith(prefix + "ssl.")}
    try:
        return client_ssl_context(props)
    except ClientConfigError as exc:
        raise ConfigError(f"the exporter's TLS settings do not load: {exc}") from None
