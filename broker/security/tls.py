"""TLS for SSL and SASL_SSL listeners: an ssl.SSLContext from Kafka's ssl.* properties.

Key and trust stores are PEM (Kafka's `ssl.keystore.type=PEM`, KIP-651), given as files or inline:

    ssl.keystore.location=/etc/kafka/broker.pem      # private key and certificate chain in one file
    ssl.key.password=...                            # when that key is encrypted
    ssl.keystore.certificate.chain=-----BEGIN ...   # or inline: the chain ...
    ssl.keystore.key=-----BEGIN ...                 # ... and the key
    ssl.truststore.location=/etc/kafka/ca.pem       # CAs that sign client certificates
    ssl.client.auth=none|requested|required

A store whose type is left at Kafka's default (JKS) but whose file is PEM is read as PEM; JKS and
PKCS12 stores are refused with how to convert them. Any key can be set per listener as
`listener.name.<listener>.<key>`; as in Kafka (KIP-684), `ssl.client.auth` applies to a SASL_SSL
listener only when set with that listener prefix.

With a client certificate the connection's principal is `User:` + the certificate's subject as
an RFC 2253 distinguished name, rewritten by `ssl.principal.mapping.rules` (Kafka's syntax:
`RULE:^CN=(.*?),O=.*$/$1/L,DEFAULT`); without one it is User:ANONYMOUS.
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile

from ..config import BROKER_KEYS, ConfigError

_PEM_MARK = b"-----BEGIN"
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
# RFC 2253 attribute names, as Java's X500Principal prints them.
_DN_NAMES = {"commonName": "CN", "organizationalUnitName": "OU", "organizationName": "O", "localityName": "L",
             "stateOrProvinceName": "ST", "countryName": "C", "streetAddress": "STREET",
             "domainComponent": "DC", "userId": "UID"}


def listener_setting(config, listener: str, key: str, *, prefixed_only: bool = False):
    """`listener.name.<listener>.<key>` when set, else the broker-wide `key` (Kafka's lookup)."""
    raw = config.original.get(f"listener.name.{listener.lower()}.{key}")
    if raw is not None:
        spec = BROKER_KEYS.get(key)
        return spec.parse(raw) if spec else raw
    if prefixed_only:
        return None
    return config.get(key)


def _is_pem_file(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return _PEM_MARK in f.read(64 * 1024)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


def _store_type(config, listener: str, store: str, location: str | None) -> str:
    kind = listener_setting(config, listener, f"ssl.{store}.type")
    explicit = (f"ssl.{store}.type" in config.explicit
                or f"listener.name.{listener.lower()}.ssl.{store}.type" in config.original)
    if kind == "PEM" or (location and not explicit and _is_pem_file(location)):
        return "PEM"
    if not explicit and not location:
        return "PEM"
    raise ConfigError(f"ssl.{store}.type={kind} is not supported on listener {listener}: kafka-wire reads PEM "
                      f"stores (convert with `openssl pkcs12 -in store.p12 -nodes -out store.pem`, after "
                      f"`keytool -importkeystore -deststoretype PKCS12` for JKS) and ssl.{store}.type=PEM")


def server_context(config, listener: str, security_protocol: str) -> ssl.SSLContext:
    """The server-side SSLContext for one SSL or SASL_SSL listener."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _configure(ctx, config, listener, security_protocol)
    return ctx


def reconfigure_context(ctx: ssl.SSLContext, config, listener: str, security_protocol: str) -> None:
    """Serve the new connections of a listener whose listening socket holds `ctx` with its new TLS
    settings (a dynamic broker config change; a running connection keeps its own). Protocols,
    ciphers and client authentication are set on `ctx` itself; the key store and trust store come
    from a fresh context each new connection switches to during its handshake (a trust store can
    only grow in place, and a CA removed must stop being trusted). Raises ConfigError, `ctx` untouched."""
    fresh = server_context(config, listener, security_protocol)
    _configure(ctx, config, listener, security_protocol)

    def use_fresh(connection, _server_name, _ctx) -> None:
        connection.context = fresh

    ctx.sni_callback = use_fresh


def _configure(ctx: ssl.SSLContext, config, listener: str, security_protocol: str) -> None:
    protocols = [p for p in listener_setting(config, listener, "ssl.enabled.protocols") if p in _PROTOCOLS]
    if not protocols:
        raise ConfigError(f"ssl.enabled.protocols on listener {listener} names no protocol we serve")
    ctx.minimum_version = min(_PROTOCOLS[p] for p in protocols)
    ctx.maximum_version = max(_PROTOCOLS[p] for p in protocols)
    _load_keystore(ctx, config, listener)
    _load_truststore(ctx, config, listener)
    ciphers = listener_setting(config, listener, "ssl.cipher.suites")
    if ciphers:
        try:
            ctx.set_ciphers(":".join(ciphers))
        except ssl.SSLError as exc:
            raise ConfigError(f"ssl.cipher.suites on listener {listener}: {exc}") from None
    if security_protocol == "SASL_SSL":
        client_auth = listener_setting(config, listener, "ssl.client.auth", prefixed_only=True) or "none"
    else:
        client_auth = listener_setting(config, listener, "ssl.client.auth")
    ctx.verify_mode = _CLIENT_AUTH[client_auth]


def _load_keystore(ctx: ssl.SSLContext, config, listener: str) -> None:
    location = listener_setting(config, listener, "ssl.keystore.location")
    chain = listener_setting(config, listener, "ssl.keystore.certificate.chain")
    key = listener_setting(config, listener, "ssl.keystore.key")
    password = (listener_setting(config, listener, "ssl.key.password")
                or listener_setting(config, listener, "ssl.keystore.password"))
    _store_type(config, listener, "keystore", location)
    try:
        if location:
            ctx.load_cert_chain(location, password=password)
        elif chain and key:
            # The ssl module loads certificates from files only: a private temporary file, gone
            # as soon as it is read.
            with tempfile.NamedTemporaryFile("w", suffix=".pem", delete=True) as pem:
                os.chmod(pem.name, 0o600)
                pem.write(key.strip() + "\n" + chain.strip() + "\n")
                pem.flush()
                ctx.load_cert_chain(pem.name, password=password)
        else:
            raise ConfigError(f"listener {listener} needs ssl.keystore.location (or ssl.keystore.key and "
                              "ssl.keystore.certificate.chain)")
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"cannot load the key store of listener {listener}: {exc}") from None


def _load_truststore(ctx: ssl.SSLContext, config, listener: str) -> None:
    location = listener_setting(config, listener, "ssl.truststore.location")
    certificates = listener_setting(config, listener, "ssl.truststore.certificates")
    if not location and not certificates:
        return
    _store_type(config, listener, "truststore", location)
    try:
        if location:
            ctx.load_verify_locations(cafile=location)
        else:
            ctx.load_verify_locations(cadata=certificates)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"cannot load the trust store of listener {listener}: {exc}") from None


def distinguished_name(cert: dict | None) -> str | None:
    """`CN=alice,OU=eng,O=example` from a peer certificate (ssl.getpeercert()), or None. RFC 2253
    lists the subject's RDNs last first, as Java's X500Principal.getName() does."""
    if not cert or not cert.get("subject"):
        return None
    rdns = []
    for rdn in reversed(cert["subject"]):
        rdns.append("+".join(f"{_DN_NAMES.get(name, name)}={_escape_dn(value)}" for name, value in rdn))
    return ",".join(rdns)


_RULE = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")


class PrincipalMappingError(ValueError):
    """No ssl.principal.mapping.rules rule applies to a certificate's name (the login fails)."""


class SslPrincipalMapper:
    """Kafka's ssl.principal.mapping.rules: the first rule whose pattern matches the whole
    distinguished name rewrites it (Java's $1 group references; /L or /U change the case);
    DEFAULT keeps the name as it is."""

    def __init__(self, rules: str | None) -> None:
        self.rules: list[tuple[re.Pattern, str, str] | None] = []  # None is DEFAULT
        text = (rules or "DEFAULT").strip()
        for match in _RULE_SPLITTER.finditer(text):
            if match.end() == match.start():
                break
            if match.group(2):
                self.rules.append(None)
            elif match.group(3) is not None:
                try:
                    pattern = re.compile(match.group(3))
                except re.error as exc:
                    raise ConfigError(f"Invalid rule in ssl.principal.mapping.rules: {match.group(1)}: {exc}") from None
                self.rules.append((pattern, match.group(4), match.group(5)))
            elif match.group(6):
                raise ConfigError(f"Invalid rule: {match.group(6)}")
        self.text = text

    def name(self, distinguished: str) -> str:
        for rule in self.rules:
            if rule is None:
                return distinguished
            pattern, replacement, case = rule
            if pattern.fullmatch(distinguished):
                result = pattern.sub(lambda m: re.sub(r"\$(\d)", lambda g: m.group(int(g.group(1))) or "",
                                                      replacement), distinguished)
                return result.lower() if case == "L" else result.upper() if case == "U" else result
        raise PrincipalMappingError(f"No rules apply to {distinguished}, rules {self.text}")


def principal_from_certificate(cert: dict | None, mapper: SslPrincipalMapper | None = None) -> str | None:
    """`User:<mapped distinguished name>` for a peer certificate, or None without one."""
    name = distinguished_name(cert)
    if name is None:
        return None
    return "User:" + (mapper.name(name) if mapper else name)


def _escape_dn(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;=' or (ch == "#" and i == 0) or (ch == " " and (i == 0 or i == len(value) - 1)):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)
