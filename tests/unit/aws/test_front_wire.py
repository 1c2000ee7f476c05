"""The front's HTTP/1.1 reading: bodies by length, chunked, to the connection's end; no body where none comes."""

from __future__ import annotations

import asyncio

from harness.aws.front.wire import Message, read_message


def _read(data: bytes, *, request: bool, head: bool = False) -> Message | None:
    async def go() -> Message | None:
        r = asyncio.StreamReader()
        r.feed_data(data)
        r.feed_eof()
        return await read_message(r, request=request, head=head)

    return asyncio.run(go())


def test_a_chunked_request_is_decoded_and_sent_on_with_its_length():
    m = _read(b"PUT /b/k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
              b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nx-trailer: 1\r\n\r\n", request=True)
    assert m.body == b"hello world"
    out = m.encode()
    assert b"content-length: 11" in out and b"Transfer-Encoding" not in out and b"Expect" not in out
    assert out.endswith(b"\r\n\r\nhello world") and b"Host: x" in out  # Host as the client signed it


def test_answers_without_a_body_and_an_answer_read_to_the_end():
    head = _read(b"HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n", request=False, head=True)
    assert head.body == b"" and head.encode_head_only().endswith(b"Content-Length: 42\r\n\r\n")
    assert _read(b"HTTP/1.1 204 No Content\r\n\r\n", request=False).body == b""
    to_end = _read(b"HTTP/1.0 200 OK\r\n\r\nall of it", request=False)
    assert to_end.body == b"all of it" and to_end.close
    assert _read(b"", request=True) is None  # a clean end between requests


def test_a_head_past_max_head_is_refused_though_the_buffer_has_room():
    import pytest

    from harness.aws.front.wire import MAX_HEAD, WireError

    def head(size: int) -> bytes:
        return b"GET / HTTP/1.1\r\nx-pad: " + b"a" * (size - 27) + b"\r\n\r\n"

    async def go(data: bytes) -> Message | None:
        r = asyncio.StreamReader(limit=1 << 20)  # the front's buffer: room for far more than MAX_HEAD
        r.feed_data(data)
        r.feed_eof()
        return await read_message(r, request=True)

    assert len(head(MAX_HEAD)) == MAX_HEAD and asyncio.run(go(head(MAX_HEAD))).header(b"x-pad")
    with pytest.raises(WireError, match="head is too long"):
        asyncio.run(go(head(MAX_HEAD + 1)))
