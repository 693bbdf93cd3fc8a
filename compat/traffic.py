"""A counting TCP proxy in front of a broker: which requests (API, version, client id) reached it.

`kafka-wire compat` starts its brokers with `advertised.listeners` naming the proxy, so every
connection a client makes, the bootstrap one and those to the broker it learns from Metadata,
passes through here. The proxy cuts the client-to-broker direction into frames (kafka_wire's
FrameReader), counts each request by its header (api key, api version, client id), and forwards
the bytes unchanged once the requests among them are counted; the broker-to-client direction is
copied as it comes. What a test did is then measured at the broker's door, whatever the client logs.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import socket
import threading

from kafka_wire.framing import FrameReader, FrameSizeError
from kafka_wire.headers import REQUEST_HEADER
from kafka_wire.messages import APIS
from kafka_wire.primitives import DecodeError


def api_name(key: int) -> str:
    api = APIS.get(key)
    return api.name if api is not None else f"ApiKey{key}"


class CountingProxy:
    """Listens on 127.0.0.1:`port` (picked and bound at construction), forwards to `upstream`.

    counts: Counter of (client id, api name, api version) -> requests, since the last take().
    With record=True it also keeps every request frame whole (client id, api key, api version, the
    frame's bytes without its size prefix), in arrival order, until take_frames()
    (compat/conformance/capture.py decodes them into the replay corpus).
    """

    def __init__(self, upstream: tuple[str, int] | None = None, host: str = "127.0.0.1", record: bool = False):
        self.upstream = upstream
        self.record = record
        self._frames: list[tuple[str, int, int, bytes]] = []
        # record=True: topic id -> name, from the answers to Metadata, CreateTopics and
        # DescribeTopicPartitions (a replay names the topic where a request carried its id).
        self.topic_ids: dict[str, str] = {}
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((host, 0))  # held from now on, so a broker can advertise it before we serve
        self._listener.listen(128)
        self.host = host
        self.port = self._listener.getsockname()[1]
        self._counts: collections.Counter = collections.Counter()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task] = set()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, upstream: tuple[str, int] | None = None) -> None:
        if upstream is not None:
            self.upstream = upstream
        if self.upstream is None:
            raise ValueError("no upstream broker to forward to")
        ready = threading.Event()

        def serve() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)

            async def begin() -> None:
                self._server = await asyncio.start_server(self._accept, sock=self._listener)

            self._loop.run_until_complete(begin())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, name=f"counting-proxy-{self.port}", daemon=True)
        self._thread.start()
        ready.wait(10)

    def take(self) -> collections.Counter:
        """The counts since the last take(), and a fresh start."""
        with self._lock:
            counts, self._counts = self._counts, collections.Counter()
        return counts

    def take_frames(self) -> list[tuple[str, int, int, bytes]]:
        """The request frames kept since the last take_frames() (record=True), and a fresh start."""
        with self._lock:
            frames, self._frames = self._frames, []
        return frames

    def stop(self) -> None:
        loop = self._loop
        if loop is None:
            self._listener.close()
            return

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.sleep(0)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(shutdown(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5)
        self._listener.close()

    def __enter__(self) -> CountingProxy:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        try:
            try:
                broker_reader, broker_writer = await asyncio.open_connection(*self.upstream)
            except OSError:
                client_writer.close()
                return
            asked: dict[int, tuple[int, int]] = {}  # correlation id -> (api key, version), record=True
            requests = asyncio.ensure_future(self._requests(client_reader, broker_writer, asked))
            responses = asyncio.ensure_future(self._copy(broker_reader, client_writer, asked if self.record else None,
                                                         self.topic_ids))
            # Either side closing ends the connection, as it would without a proxy in between.
            await asyncio.wait({requests, responses}, return_when=asyncio.FIRST_COMPLETED)
            for side in (requests, responses):
                side.cancel()
            for writer in (client_writer, broker_writer):
                with contextlib.suppress(Exception):
                    writer.close()
        finally:
            self._tasks.discard(task)

    async def _requests(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                        asked: dict | None = None) -> None:
        frames: FrameReader | None = FrameReader()
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(1 << 16):
                if frames is not None:
                    frames.feed(data)
                    try:
                        for frame in frames:
                            self._count(frame, asked)
                    except FrameSizeError:  # no frames past it; the broker closes the connection
                        frames = None
                writer.write(data)
                await writer.drain()

    def _count(self, frame, asked: dict | None = None) -> None:
        try:
            # Version 1 of the request header: the fields every version starts with.
            header, _ = REQUEST_HEADER.decode_from(frame, 1)
        except DecodeError:
            return
        client_id = header.client_id or ""
        api_key, api_version = header.request_api_key, header.request_api_version
        with self._lock:
            self._counts[(client_id, api_name(api_key), api_version)] += 1
            if self.record:
                self._frames.append((client_id, api_key, api_version, bytes(frame)))
                if asked is not None:
                    asked[header.correlation_id] = (api_key, api_version)

    @staticmethod
    async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, asked: dict | None = None,
                    topic_ids: dict | None = None) -> None:
        frames = FrameReader() if asked is not None else None
        with contextlib.suppress(ConnectionError):
            while chunk := await reader.read(1 << 16):
                if frames is not None:
                    frames.feed(chunk)
                    try:
                        for frame in frames:
                            _learn_topic_ids(frame, asked, topic_ids)
                    except FrameSizeError:
                        frames = None
                writer.write(chunk)
                await writer.drain()


TOPIC_ID_ANSWERS = (3, 19, 75)  # Metadata, CreateTopics, DescribeTopicPartitions


def _learn_topic_ids(frame, asked: dict, topic_ids: dict) -> None:
    """Notes the topic ids an answer names (recording proxies only)."""
    from kafka_wire.framing import decode_response_frame

    correlation_id = int.from_bytes(frame[0:4], "big", signed=True)
    api_key, version = asked.pop(correlation_id, (None, None))
    if api_key not in TOPIC_ID_ANSWERS:
        return
    try:
        answer = decode_response_frame(APIS[api_key], version, frame, None)
    except (DecodeError, ValueError):
        return
    for topic in getattr(answer, "topics", None) or ():
        topic_id, name = getattr(topic, "topic_id", None), getattr(topic, "name", None)
        if topic_id is not None and name and topic_id.int != 0:
            topic_ids[str(topic_id)] = name
