"""The console's HTTP server: asyncio in the broker's event loop, one request per connection, as
broker/metrics_endpoint.py serves metrics. GET / and /static/* serve the page; /api/* the JSON API
(console/api.py). Writes (POST, DELETE) must send JSON with the X-Console header, which a form on
another site cannot, and the session cookie is SameSite=Strict.
"""

from __future__ import annotations

import asyncio
import json
import logging
import mimetypes
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from broker.http_listener import HttpRequestError, close_server, read_http_request, start_http

from .api import ApiError, ConsoleApi, from_kafka, to_json
from .kafka_calls import KafkaCalls, KafkaError
from .registry_views import RegistryViews
from .sampler import Sampler
from .sessions import COOKIE, SESSION_SECONDS, Sessions

logger = logging.getLogger("kafka_wire.console")

STATIC = Path(__file__).parent / "static"
MAX_HEAD = 16 * 1024
MAX_BODY = 1 << 20
READ_TIMEOUT = 10.0
# Connections served at once; more are closed at once (the page makes a few at a time), so idle or
# slow clients cannot take the broker's file descriptors.
MAX_CONNECTIONS = 64
REASONS = {200: "OK", 204: "No Content", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
           404: "Not Found", 405: "Method Not Allowed", 409: "Conflict", 411: "Length Required",
           413: "Payload Too Large", 415: "Unsupported Media Type", 416: "Range Not Satisfiable",
           431: "Request Header Fields Too Large", 500: "Internal Server Error", 503: "Service Unavailable"}
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}


class Request:
    def __init__(self, method: str, target: str, headers: dict[str, str], body: bytes, peer) -> None:
        self.method = method
        parts = urlsplit(target)
        self.path = parts.path
        self.query = dict(parse_qsl(parts.query, keep_blank_values=True))
        self.headers = headers
        self.body = body
        self.peer = peer

    def cookie(self, name: str) -> str | None:
        # Split by hand: other applications on the same host may set cookies SimpleCookie refuses.
        for item in self.headers.get("cookie", "").split(";"):
            key, _, value = item.strip().partition("=")
            if key == name:
                return value
        return None

    def json(self) -> dict:
        if not self.body:
            return {}
        try:
            value = json.loads(self.body)
        except (ValueError, UnicodeDecodeError):
            raise ApiError(400, "INVALID_REQUEST", "The request body is not JSON") from None
        if not isinstance(value, dict):
            raise ApiError(400, "INVALID_REQUEST", "The request body must be a JSON object")
        return value


class Response:
    def __init__(self, status: int, body: bytes, content_type: str = "application/json",
                 headers: list[tuple[str, str]] | None = None) -> None:
        self.status, self.body, self.content_type = status, body, content_type
        self.headers = headers or []


def _error(status: int, error: str, message: str, details: dict | None = None) -> Response:
    return Response(status, to_json({"error": error, "message": message, **(details or {})}))


class ConsoleServer:
    def __init__(self, broker, *, read_only: bool, sample_interval_ms: int) -> None:
        self.broker = broker
        self.sampler = Sampler(broker, sample_interval_ms)
        self.api = ConsoleApi(broker, self.sampler, read_only)
        self.registry = RegistryViews(broker)
        self.sessions = Sessions(broker)
        self.read_only = read_only
        self.server: asyncio.base_events.Server | None = None
        self.address: tuple[str, int] | None = None
        self.cookie = COOKIE
        self._static = {p.name: p for p in STATIC.iterdir() if p.is_file()}

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self.server = await start_http(self._serve, host, port, MAX_HEAD, MAX_CONNECTIONS)
        self.address = self.server.sockets[0].getsockname()[:2]
        # Browsers do not keep cookies apart by port: each console's session cookie has its own name.
        self.cookie = f"{COOKIE}_{self.address[1]}"
        self.sampler.start()
        logger.info("console on http://%s:%d/ (%s)", self.address[0], self.address[1],
                 "read-only" if self.read_only else "read-write")
        return self.address

    async def stop(self) -> None:
        await self.sampler.stop()
        await close_server(self.server)
        self.server = None

    # -- HTTP -----------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            response = await self._read_and_answer(reader, writer.get_extra_info("peername") or ("", 0))
            if response is None:
                return
            head = [f"HTTP/1.1 {response.status} {REASONS.get(response.status, '')}",
                    f"Content-Type: {response.content_type}", f"Content-Length: {len(response.body)}",
                    "Cache-Control: no-store", "X-Content-Type-Options: nosniff", "Connection: close"]
            head += [f"{k}: {v}" for k, v in response.headers]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + response.body)
            await writer.drain()
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            pass
        except Exception:
            logger.exception("console request failed")

    async def _read_and_answer(self, reader: asyncio.StreamReader, peer) -> Response | None:
        try:
            read = await read_http_request(reader, MAX_BODY, READ_TIMEOUT)
        except HttpRequestError as exc:
            return _error(exc.status, "INVALID_REQUEST", exc.message)
        if read is None:
            return None  # closed before a request
        method, target, headers, body = read
        request = Request(method, target, headers, body, peer)
        try:
            return await self._route(request)
        except ApiError as exc:
            return _error(exc.status, exc.error, exc.message, exc.details)
        except KafkaError as exc:
            err = from_kafka(exc)
            return _error(err.status, err.error, err.message)
        except Exception:
            logger.exception("console: %s %s failed", method, target)
            return _error(500, "UNKNOWN_SERVER_ERROR", "The console failed to answer; the broker's log says why")

    def _static_file(self, name: str) -> Response:
        path = self._static.get(name)
        if path is None:
            return _error(404, "NOT_FOUND", f"no file {name!r}")
        content_type = TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        return Response(200, path.read_bytes(), content_type)

    async def _route(self, request: Request) -> Response:
        path = request.path
        if not path.startswith("/api/"):
            if request.method not in ("GET", "HEAD"):
                return _error(405, "INVALID_REQUEST", "only GET here")
            if path in ("/", "/index.html"):
                return self._static_file("index.html")
            if path.startswith("/static/"):
                return self._static_file(path[len("/static/"):])
            return _error(404, "NOT_FOUND", f"nothing at {path}")
        segments = [unquote(s) for s in path[len("/api/"):].split("/") if s != ""]
        method = request.method
        writing = method in ("POST", "DELETE", "PUT")
        if writing:
            if request.headers.get("x-console") != "1" or (
                    request.body and not request.headers.get("content-type", "").startswith("application/json")):
                return _error(415, "INVALID_REQUEST", "writes need Content-Type: application/json and X-Console: 1")
        token = request.cookie(self.cookie)
        if segments == ["session"] and method == "GET":
            user = self.sessions.user_of(token)
            return Response(200, to_json({"login_required": self.sessions.login_required(), "user": user,
                                          "read_only": self.read_only,
                                          "schema_registry": self.registry.available()}))
        if segments == ["login"] and method == "POST":
            body = request.json()
            username, password = body.get("username"), body.get("password")
            if not isinstance(username, str) or not isinstance(password, str):
                return _error(400, "INVALID_REQUEST", "give a username and a password")
            new_token = await self.sessions.login(username, password)
            if new_token is None:
                return _error(401, "SASL_AUTHENTICATION_FAILED",
                              "Authentication failed: invalid credentials (the user name or password is wrong)")
            return Response(200, to_json({"user": username}), headers=[
                ("Set-Cookie", f"{self.cookie}={new_token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={SESSION_SECONDS}")])
        if segments == ["logout"] and method == "POST":
            self.sessions.logout(token)
            return Response(200, to_json({}), headers=[("Set-Cookie", f"{self.cookie}=; Path=/; Max-Age=0")])
        principal = self.sessions.principal(token)
        if principal is None:
            return _error(401, "LOGIN_REQUIRED", "Log in with a SASL/SCRAM user of this broker")
        calls = KafkaCalls(self.broker, principal, request.peer)
        api = self.api
        match (method, segments):
            case ("GET", ["overview"]):
                return Response(200, to_json(await api.overview(calls)))
            case ("GET", ["topics", topic]):
                return Response(200, to_json(await api.topic(calls, topic)))
            case ("GET", ["topics", topic, "messages"]):
                page = await api.messages(calls, topic, request.query)
                await self.registry.decode_messages(principal, request.peer[0], topic, page["messages"])
                return Response(200, to_json(page))
            case ("POST", ["topics"]):
                return Response(200, to_json(await api.create_topic(calls, request.json())))
            case ("DELETE", ["topics", topic]):
                return Response(200, to_json(await api.delete_topic(calls, topic)))
            case ("POST", ["topics", topic, "messages"]):
                return Response(200, to_json(await api.produce(calls, topic, request.json())))
            case ("GET", ["groups"]):
                return Response(200, to_json(await api.groups(calls)))
            case ("GET", ["groups", group_id]):
                return Response(200, to_json(await api.group(calls, group_id)))
            case ("POST", ["groups", group_id, "offsets"]):
                return Response(200, to_json(await api.reset_offsets(calls, group_id, request.json())))
            case ("GET", ["registry"]):
                return Response(200, to_json(await self.registry.summary(principal, request.peer[0], request.query)))
            case ("GET", ["registry", "subjects", subject]):
                return Response(200, to_json(await self.registry.subject(principal, request.peer[0], subject)))
            case ("GET", ["registry", "subjects", subject, "versions", version]):
                return Response(200, to_json(await self.registry.version(principal, request.peer[0], subject, version)))
        return _error(404, "NOT_FOUND", f"no API {method} {path}")
