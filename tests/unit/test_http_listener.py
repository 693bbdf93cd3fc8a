"""broker/http_listener.read_http_request, which the console and the Schema Registry read requests
with: fed bytes through an asyncio StreamReader, no socket."""

from __future__ import annotations

import asyncio

import pytest

from broker.http_listener import HttpRequestError, read_http_request


def read(data: bytes, *, max_body: int = 100, limit: int = 1024, eof: bool = True):
    async def run():
        reader = asyncio.StreamReader(limit=limit)
        reader.feed_data(data)
        if eof:
            reader.feed_eof()
        return await read_http_request(reader, max_body, 5.0)

    return asyncio.run(run())


def test_a_request_with_a_body():
    method, target, headers, body = read(b"POST /subjects/s/versions?x=1 HTTP/1.1\r\nHost: h\r\n"
                                         b"Content-Type: application/json\r\nContent-Length: 4\r\n\r\nbody")
    assert (method, target, body) == ("POST", "/subjects/s/versions?x=1", b"body")
    assert headers == {"host": "h", "content-type": "application/json", "content-length": "4"}


def test_two_requests_on_one_connection_are_read_one_after_the_other():
    async def run():
        reader = asyncio.StreamReader()
        reader.feed_data(b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n")
        reader.feed_eof()
        return [await read_http_request(reader, 10, 5.0) for _ in range(3)]

    first, second, third = asyncio.run(run())
    assert first[1] == "/a" and second[1] == "/b" and third is None  # then the peer closed


@pytest.mark.parametrize("data, status", [
    (b"garbage\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nContent-Length: ten\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", 413),
    (b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 413),
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411),
    (b"GET / HTTP/1.1\r\nX: " + b"y" * 2000 + b"\r\n\r\n", 431),
])
def test_requests_that_cannot_be_read_say_which_status(data, status):
    with pytest.raises(HttpRequestError) as refused:
        read(data)
    assert refused.value.status == status and refused.value.message


def test_a_request_cut_short_is_an_incomplete_read():
    with pytest.raises(asyncio.IncompleteReadError):
        read(b"GET / HTTP/1.1\r\nHost")
    with pytest.raises(asyncio.IncompleteReadError):
        read(b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nshort")
