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

import socket

from kafka_wire.errors import ErrorCode
from kafka_wire.framing import ClientConnection
from kafka_wire.headers import decode_response_header
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.primitives import read_int16
from kafka_wire.sasl import PLAIN, SCRAM_MECHANISMS, ScramClient, plain_token

from .security import ClientSecurity

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
        # Numbers and frames the requests, cuts the answers out of what the socket delivers.
        self.framing = ClientConnection(client_id)
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

    @property
    def client_id(self) -> str | None:
        return self.framing.client_id

    @property
    def correlation_id(self) -> int:
        """The last request's; decode_response expects it (tests reading pipelined answers set it)."""
        return self.framing.correlation_id

    @correlation_id.setter
    def correlation_id(self, value: int) -> None:
        self.framing.correlation_id = value

    def frame(self, api_name: str, version: int, body) -> bytes:
        """The bytes of one request, size prefix included, numbered with the next correlation id."""
        return self.framing.request(APIS_BY_NAME[api_name], version, body)

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytearray:
        """The next frame the broker sends (without its size prefix). Reads no byte past it, so
        the socket may be wrapped (TLS) or handed on between frames."""
        frames = self.framing.frames
        while (frame := frames.next_frame()) is None:
            chunk = self.sock.recv(frames.bytes_needed)
            if not chunk:
                raise ConnectionClosed("connection closed by the broker")
            frames.feed(chunk)
        return frame

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

    def decode_response(self, api_name: str, version: int, frame):
        """The answer to the last request; CorrelationIdMismatch (a ValueError) if it is not."""
        return self.framing.response(APIS_BY_NAME[api_name], version, frame)

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
        _, pos = decode_response_header(frame, api.key, api.is_flexible(version))
        error, _ = read_int16(frame, pos)
        if error == ErrorCode.UNSUPPORTED_VERSION:
            version = 0  # Kafka answers a version it does not know in v0, with its table
        response = self.decode_response(API_VERSIONS, version, frame)
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
