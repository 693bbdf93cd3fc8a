"""TLS of the Schema Registry: the server side of its HTTPS listener (the broker's key store) and
the client side of HTTPS between the registries of a cluster (registry/cluster.py), both from the
broker's ssl.* settings as a listener named SCHEMA_REGISTRY reads them
(`listener.name.schema_registry.ssl.*` first, then the broker-wide keys)."""

from __future__ import annotations

import ssl

from broker.config import ConfigError
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
    """The client side of HTTPS between registries, from the broker's TLS settings for the registry
    listener (SCHEMA_REGISTRY). Raises ConfigError for stores that do not load."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    location = listener_setting(config, REGISTRY_LISTENER, "ssl.truststore.location")
    certificates = listener_setting(config, REGISTRY_LISTENER, "ssl.truststore.certificates")
    try:
        if location:
            ctx.load_verify_locations(cafile=location)
        elif certificates:
            ctx.load_verify_locations(cadata=certificates)
        else:
            ctx.load_default_certs()
        if listener_setting(config, REGISTRY_LISTENER, "ssl.client.auth") == "required":
            keystore = listener_setting(config, REGISTRY_LISTENER, "ssl.keystore.location")
            password = (listener_setting(config, REGISTRY_LISTENER, "ssl.key.password")
                        or listener_setting(config, REGISTRY_LISTENER, "ssl.keystore.password"))
            if keystore:
                ctx.load_cert_chain(keystore, password=password)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"the Schema Registry's TLS settings for forwarding do not load: {exc}") from None
    ctx.check_hostname = bool(listener_setting(config, REGISTRY_LISTENER, "ssl.endpoint.identification.algorithm"))
    return ctx
