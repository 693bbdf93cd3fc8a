"""How our client connects to a secured listener: Kafka's client properties (security.protocol,
sasl.mechanism, sasl.jaas.config, ssl.*) read into a TLS context and SASL credentials."""

from __future__ import annotations

import os
import re
import socket
import ssl
import tempfile
from dataclasses import dataclass, field

from kafka_wire.sasl import PLAIN, SCRAM_MECHANISMS

class ClientConfigError(ValueError):
    """Client properties we cannot connect with (Kafka's ConfigException); the message says why."""


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
# sasl.jaas.config: `<LoginModule class> <flag> key="value" key=value ...;`
_JAAS = re.compile(r"\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)"
                   r"(?P<options>.*?);?\s*$", re.DOTALL | re.IGNORECASE)
_JAAS_OPTION = re.compile(r"""\s*([\w.\-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s;]+)""")
_LOGIN_MODULES = ("org.apache.kafka.common.security.scram.ScramLoginModule",
                  "org.apache.kafka.common.security.plain.PlainLoginModule")


@dataclass(frozen=True)
class ClientSecurity:
    """How a client connects to a listener: Kafka's security.protocol, the TLS context for SSL and
    SASL_SSL, and the SASL mechanism and credentials for SASL_PLAINTEXT and SASL_SSL."""

    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> ClientSecurity:
        """From Kafka client properties (a --command-config file). Raises ClientConfigError."""
        protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ClientConfigError(f"Invalid value {protocol} for configuration security.protocol: "
                                    f"expected one of {', '.join(SECURITY_PROTOCOLS)}")
        context = client_ssl_context(props) if protocol in ("SSL", "SASL_SSL") else None
        if not protocol.startswith("SASL_"):
            return cls(protocol, context)
        mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()
        if mechanism != PLAIN and mechanism not in SCRAM_MECHANISMS:
            raise ClientConfigError(f"sasl.mechanism={mechanism} is not supported: kafka-wire clients log in with "
                                    f"PLAIN, {', '.join(SCRAM_MECHANISMS)} (Kafka's default is GSSAPI: set "
                                    "sasl.mechanism)")
        username, password = jaas_credentials(props.get("sasl.jaas.config"))
        return cls(protocol, context, mechanism, username, password)

    def secure(self, sock: socket.socket, host: str) -> socket.socket:
        """The socket wrapped in TLS when the protocol asks for it (the handshake happens here)."""
        if self.ssl_context is None:
            return sock
        return self.ssl_context.wrap_socket(sock, server_hostname=host)


def jaas_credentials(config: str | None) -> tuple[str, str]:
    """username and password from a sasl.jaas.config value for the SCRAM or PLAIN login module."""
    if not config or not config.strip():
        raise ClientConfigError("sasl.jaas.config is not set: a SASL login needs e.g. sasl.jaas.config="
                                "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                'username="alice" password="alice-secret";')
    match = _JAAS.match(config)
    if not match:
        raise ClientConfigError("sasl.jaas.config must be '<LoginModule> required key=\"value\" ...;'")
    if match.group("module") not in _LOGIN_MODULES:
        raise ClientConfigError(f"sasl.jaas.config: login module {match.group('module')} is not supported "
                                f"(use {' or '.join(_LOGIN_MODULES)})")
    options = {}
    rest = match.group("options")
    position = 0
    while rest[position:].strip():
        option = _JAAS_OPTION.match(rest, position)
        if not option:
            raise ClientConfigError(f"sasl.jaas.config: cannot read the options from {rest[position:].strip()!r}")
        value = option.group(2)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        options[option.group(1)] = value
        position = option.end()
    if not options.get("username") or "password" not in options:
        raise ClientConfigError("sasl.jaas.config needs username=\"...\" and password=\"...\"")
    return options["username"], options["password"]


def _is_pem(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return b"-----BEGIN" in f.read(64 * 1024)
    except OSError as error:
        raise ClientConfigError(f"cannot read {path}: {error}") from None


def _check_pem(props: dict[str, str], store: str, location: str | None) -> None:
    """Kafka's clients default to JKS stores; we read PEM only (a PEM file needs no type)."""
    kind = props.get(f"ssl.{store}.type", "").strip().upper()
    if kind == "PEM" or (location and not kind and _is_pem(location)):
        return
    if not location and not kind:
        return
    raise ClientConfigError(f"ssl.{store}.type={kind or 'JKS'} is not supported: kafka-wire reads PEM stores "
                            f"(convert with `openssl pkcs12 -in store.p12 -nodes -out store.pem`, after "
                            f"`keytool -importkeystore -deststoretype PKCS12` for JKS) and ssl.{store}.type=PEM")


def client_ssl_context(props: dict[str, str]) -> ssl.SSLContext:
    """The TLS context of Kafka's SSL client settings: trust store (else the system's CAs), key store
    for client authentication, ssl.endpoint.identification.algorithm (https: check the host name;
    empty: do not), ssl.enabled.protocols."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    trust_location = props.get("ssl.truststore.location", "").strip() or None
    trust_inline = props.get("ssl.truststore.certificates", "").strip() or None
    _check_pem(props, "truststore", trust_location)
    try:
        if trust_location:
            context.load_verify_locations(cafile=trust_location)
        elif trust_inline:
            context.load_verify_locations(cadata=trust_inline)
        else:
            context.load_default_certs()
    except (ssl.SSLError, OSError) as error:
        raise ClientConfigError(f"cannot load the trust store: {error}") from None
    key_location = props.get("ssl.keystore.location", "").strip() or None
    chain = props.get("ssl.keystore.certificate.chain", "").strip()
    key = props.get("ssl.keystore.key", "").strip()
    password = props.get("ssl.key.password") or props.get("ssl.keystore.password") or None
    _check_pem(props, "keystore", key_location)
    try:
        if key_location:
            context.load_cert_chain(key_location, password=password)
        elif chain and key:
            # The ssl module loads certificates from files only: a private temporary file, gone
            # as soon as it is read.
            with tempfile.NamedTemporaryFile("w", suffix=".pem", delete=True) as pem:
                os.chmod(pem.name, 0o600)
                pem.write(key + "\n" + chain + "\n")
                pem.flush()
                context.load_cert_chain(pem.name, password=password)
    except (ssl.SSLError, OSError) as error:
        raise ClientConfigError(f"cannot load the key store: {error}") from None
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    if algorithm not in ("https", ""):
        raise ClientConfigError(f"ssl.endpoint.identification.algorithm={algorithm} is not supported "
                                "(https, or empty to skip the host name check)")
    context.check_hostname = algorithm == "https"
    protocols = props.get("ssl.enabled.protocols")
    if protocols:
        versions = [_TLS_VERSIONS[p.strip()] for p in protocols.split(",") if p.strip() in _TLS_VERSIONS]
        if not versions:
            raise ClientConfigError(f"ssl.enabled.protocols={protocols} names no protocol we speak "
                                    f"({', '.join(_TLS_VERSIONS)})")
        context.minimum_version, context.maximum_version = min(versions), max(versions)
    return context
