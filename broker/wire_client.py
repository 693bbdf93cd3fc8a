"""A small blocking Kafka protocol client of our own: for the CLI tools and for tests.

It speaks to any Kafka-compatible broker with the message definitions in kafka_wire, one
request at a time per connection. Real applications use real Kafka clients; this exists so
our tools and tests can send exact requests (including ones real clients never send).

    with WireClient("127.0.0.1:9092") as client:          # one connection, exact versions
        client.call("Metadata", 12, {"topics": None})
        client.request("Metadata", {"topics": None})      # highest version both sides know

    with ClusterClient("host1:9092,host2:9092") as cluster:   # bootstrap, then the right broker
        cluster.leader("orders", 0).request("Fetch", {...})
        cluster.coordinator("my-group").request("OffsetFetch", {...})

A secured broker: `ClientSecurity.from_properties()` reads Kafka's client properties
(security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.*, ssl.keystore.*, ...);
every connection made with it is wrapped in TLS and logged in with SASL before it is returned.

    security = ClientSecurity.from_properties(parse_properties(open("client.properties").read()))
    with ClusterClient("broker:9093", security=security) as cluster: ...
"""

from __future__ import annotations

import os
import re
import socket
import ssl
import struct
import tempfile
import time
from dataclasses import dataclass, field

from kafka_wire.errors import ErrorCode
from kafka_wire.headers import RESPONSE_HEADER, encode_request_header
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.primitives import read_int16
from kafka_wire.sasl import PLAIN, SCRAM_MECHANISMS, ScramClient, plain_token
from kafka_wire.schema import Writer

API_VERSIONS = "ApiVersions"
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
# ListOffsets' special timestamps.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2


class ConnectionClosed(ConnectionError):
    """The broker closed the connection instead of answering."""


class KafkaError(Exception):
    """A response carried an error code; `error` is the ErrorCode, `context` what we asked."""

    def __init__(self, error: int | ErrorCode, context: str = "", message: str | None = None) -> None:
        self.error = ErrorCode.from_code(int(error))
        self.context = context
        self.detail = message or self.error.message
        where = f"{context}: " if context else ""
        super().__init__(f"{where}{self.error.name}: {self.detail}")

    @property
    def retriable(self) -> bool:
        return self.error.retriable


class UnsupportedVersion(Exception):
    """The broker and kafka_wire have no version of an API in common."""


class AuthenticationFailed(KafkaError):
    """The broker refused the SASL login (wrong password, unknown user, mechanism not enabled)."""


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


def split_address(address: str) -> tuple[str, int]:
    """'host:port' or '[::1]:port' -> (host, port)."""
    host, _, port = address.strip().rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {address!r}")
    return host.strip("[]"), int(port)


class WireClient:
    """One connection; `call("Metadata", 12, {...})` sends a request and returns the response."""

    def __init__(self, bootstrap: str, timeout: float = 10.0, client_id: str = "kafka-wire-client",
                 security: ClientSecurity | None = None) -> None:
        self.address = bootstrap
        host, port = split_address(bootstrap)
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.client_id = client_id
        self.correlation_id = 0
        # api key -> (min, max) the broker serves; filled by negotiate() on first request().
        self.broker_versions: dict[int, tuple[int, int]] | None = None
        self.closed = False
        if security is not None:
            try:
                self.sock = security.secure(self.sock, host)
                if security.sasl_mechanism:
                    self.sasl_authenticate(security.sasl_mechanism, security.username, security.password)
            except BaseException:
                self.close()
                raise

    def close(self) -> None:
        self.closed = True
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def frame(self, api_name: str, version: int, body) -> bytes:
        """The bytes of one request, size prefix included."""
        api = APIS_BY_NAME[api_name]
        self.correlation_id += 1
        w = Writer()
        encode_request_header(w, api.key, version, self.correlation_id, self.client_id,
                              api.is_flexible(version))
        api.request.encode(body, version, w)
        data = w.to_bytes()
        return struct.pack(">i", len(data)) + data

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._read_exactly(4))[0]
        return self._read_exactly(size)

    def _read_exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionClosed("connection closed by the broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def call(self, api_name: str, version: int, body, *, expect_response: bool = True,
             wait: float | None = None):
        """Send one request; return the decoded response (None when expect_response is False).
        `wait`: seconds the broker may legitimately hold the answer (a long-polling Fetch); the
        socket timeout is extended by that much for this call."""
        try:
            self.send_raw(self.frame(api_name, version, body))
            if not expect_response:
                return None
            if wait:
                self.sock.settimeout(self.timeout + wait)
            try:
                frame = self.read_frame()
            finally:
                if wait and not self.closed:
                    self.sock.settimeout(self.timeout)
        except BaseException:
            # Interrupted (timeout, Ctrl-C, closed): the answer may still come and would be read
            # as the next request's. The connection is unusable; ClusterClient reconnects.
            self.close()
            raise
        return self.decode_response(api_name, version, frame)

    def decode_response(self, api_name: str, version: int, frame: bytes):
        api = APIS_BY_NAME[api_name]
        flexible = api.is_flexible(version) and api.key != 18
        header, pos = RESPONSE_HEADER.decode_from(frame, 1 if flexible else 0)
        if header.correlation_id != self.correlation_id:
            raise ValueError(f"correlation id {header.correlation_id}, expected {self.correlation_id}")
        return api.response.decode(frame, version, pos)

    # -- SASL ------------------------------------------------------------------------------------

    def sasl_authenticate(self, mechanism: str, username: str, password: str, *, token: bool = False) -> None:
        """Log in as Kafka's clients do: ApiVersions, SaslHandshake, then the mechanism's tokens in
        SaslAuthenticate requests. Raises AuthenticationFailed with the broker's message. With
        token=True (SCRAM only) the login is a delegation token's: its id as user name, its HMAC in
        base64 as password, and the tokenauth=true extension."""
        context = f"SASL authentication to {self.address}"
        handshake = self.request("SaslHandshake", {"mechanism": mechanism}, lowest=1)
        if handshake.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
            raise AuthenticationFailed(handshake.error_code, context, f"the broker does not enable {mechanism} "
                                       f"(it enables {', '.join(handshake.mechanisms) or 'none'})")
        if handshake.error_code:
            raise AuthenticationFailed(handshake.error_code, context, "the listener does not expect a SASL login "
                                       "(is security.protocol right?)" if handshake.error_code ==
                                       ErrorCode.ILLEGAL_SASL_STATE else None)
        version = self.version_for("SaslAuthenticate")

        def exchange(token: bytes) -> bytes:
            answer = self.call("SaslAuthenticate", version, {"auth_bytes": token})
            if answer.error_code:
                raise AuthenticationFailed(answer.error_code, context, answer.error_message)
            return answer.auth_bytes

        if mechanism == PLAIN:
            exchange(plain_token(username, password))
            return
        scram = ScramClient(SCRAM_MECHANISMS[mechanism], username, password,
                            extensions={"tokenauth": "true"} if token else None)
        server_first = exchange(scram.first())
        try:
            client_final = scram.final(server_first)
        except (ValueError, KeyError) as error:
            raise AuthenticationFailed(ErrorCode.SASL_AUTHENTICATION_FAILED, context,
                                       f"invalid server-first-message: {error}") from None
        if not scram.verify(exchange(client_final)):
            raise AuthenticationFailed(ErrorCode.SASL_AUTHENTICATION_FAILED, context,
                                       "the broker's ServerSignature does not verify (not the broker we trust?)")

    # -- version negotiation ---------------------------------------------------------------------

    def negotiate(self) -> dict[int, tuple[int, int]]:
        """Ask ApiVersions (our highest version; the v0 fallback a broker answers with when it
        does not know that one) and remember what the broker serves."""
        api = APIS_BY_NAME[API_VERSIONS]
        version = api.max_version
        try:
            self.send_raw(self.frame(API_VERSIONS, version, {"client_software_name": "kafka-wire",
                                                             "client_software_version": "0"}))
            frame = self.read_frame()
        except BaseException:
            self.close()  # see call()
            raise
        header, pos = RESPONSE_HEADER.decode_from(frame, 0)
        error, _ = read_int16(frame, pos)
        if error == ErrorCode.UNSUPPORTED_VERSION:
            version = 0  # Kafka answers a version it does not know in v0, with its table
        response = api.response.decode(frame, version, pos)
        if response.error_code not in (ErrorCode.NONE, ErrorCode.UNSUPPORTED_VERSION):
            raise KafkaError(response.error_code, "ApiVersions")
        self.broker_versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        return self.broker_versions

    def version_for(self, api_name: str, highest: int | None = None, lowest: int | None = None) -> int:
        """The highest version of an API that the broker serves and kafka_wire defines, within
        [lowest, highest] when given (tools cap versions whose response shape they read)."""
        if self.broker_versions is None:
            self.negotiate()
        api = APIS_BY_NAME[api_name]
        served = self.broker_versions.get(api.key)
        if served is None:
            raise UnsupportedVersion(f"the broker at {self.address} does not serve {api_name}")
        top = min(served[1], api.max_version, highest if highest is not None else api.max_version)
        bottom = max(served[0], api.min_version, lowest if lowest is not None else api.min_version)
        if top < bottom:
            raise UnsupportedVersion(f"{api_name}: the broker at {self.address} serves v{served[0]}-{served[1]}, "
                                     f"we speak v{max(api.min_version, lowest or 0)}-{top}")
        return top

    def request(self, api_name: str, body, *, highest: int | None = None, lowest: int | None = None,
                wait: float | None = None):
        """Send at the highest common version (see version_for) and return the response."""
        version = self.version_for(api_name, highest, lowest)
        return self.call(api_name, version, body, wait=wait)


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


# -- the default partitioner --------------------------------------------------------------------


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 hash (Utils.murmur2: seed 0x9747b28c), as a signed 32-bit int."""
    m = 0x5BD1E995
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    rest = length % 4
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a keyed record."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions
