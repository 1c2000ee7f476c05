"""HTTP/1.1 as the front needs it: one message read whole, its head and body, and written back.

Only what AWS SDKs send and the stand-ins answer: a body by ``Content-Length`` or
``Transfer-Encoding: chunked`` (decoded, and re-sent with a length), an answer without
a body to HEAD, 1xx, 204 and 304, and an answer read to the connection's end when it
says neither. ``Expect: 100-continue`` is answered by the front itself (botocore
otherwise waits a second for it before sending a PutObject's body) and not passed on.
A head longer than ``MAX_HEAD`` is not read (``WireError``: the front closes the connection), whatever room the
stream's buffer has: the front reads bodies through a 1 MiB buffer, and no SDK sends a head past 64 KiB.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

MAX_HEAD = 64 * 1024
HOP = frozenset({b"connection", b"keep-alive", b"transfer-encoding", b"expect", b"proxy-connection", b"te",
                 b"upgrade"})


class WireError(Exception):
    """A message the front cannot read (the connection is closed)."""


@dataclass
class Message:
    """A request (``first``: ``METHOD target HTTP/1.1``) or an answer (``HTTP/1.1 status reason``)."""

    first: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes = b""
    close: bool = False  # the sender closes after it (HTTP/1.0, ``Connection: close``, or read to the end)

    def header(self, name: bytes, default: bytes = b"") -> bytes:
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return default

    @property
    def status(self) -> int:
        return int(self.first.split(b" ", 2)[1])

    def encode(self) -> bytes:
        """The message with its body's length (hop-by-hop headers dropped: each side's own)."""
        out = [self.first]
        out += [k + b": " + v for k, v in self.headers if k.lower() not in HOP and k.lower() != b"content-length"]
        out.append(b"content-length: " + str(len(self.body)).encode())
        return b"\r\n".join(out) + b"\r\n\r\n" + self.body

    def encode_head_only(self) -> bytes:
        """An answer to HEAD: its headers as they were (its length says the object's), no body."""
        out = [self.first] + [k + b": " + v for k, v in self.headers if k.lower() not in HOP]
        return b"\r\n".join(out) + b"\r\n\r\n"


async def read_head(reader: asyncio.StreamReader) -> Message | None:
    """A message's head, or None at a clean end of the connection."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial.strip():
            return None
        raise WireError("the connection ended inside a message's head") from None
    except asyncio.LimitOverrunError:
        raise WireError("a message's head is too long") from None
    if len(raw) > MAX_HEAD:
        raise WireError(f"a message's head is too long ({len(raw)} bytes, past {MAX_HEAD})")
    lines = raw[:-4].split(b"\r\n")
    headers = []
    for line in lines[1:]:
        k, sep, v = line.partition(b":")
        if not sep:
            raise WireError(f"a malformed header line: {line[:80]!r}")
        headers.append((k.strip(), v.strip()))
    m = Message(lines[0], headers)
    conn = m.header(b"connection").lower()
    m.close = conn == b"close" or (lines[0].endswith(b"HTTP/1.0") and conn != b"keep-alive")
    return m


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                pass
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)


async def read_body(reader: asyncio.StreamReader, m: Message, *, request: bool, head: bool = False) -> None:
    """Read ``m``'s body into it. ``request``: a request (no length: no body); ``head``: the answer to HEAD."""
    try:
        if not request and (head or m.status < 200 or m.status in (204, 304)):
            return
        if m.header(b"transfer-encoding").lower().endswith(b"chunked"):
            m.body = await _chunked(reader)
            return
        length = m.header(b"content-length")
        if length:
            m.body = await reader.readexactly(int(length))
        elif not request:
            m.body = await reader.read()
            m.close = True
    except (asyncio.IncompleteReadError, ValueError) as e:
        raise WireError(f"a body could not be read: {e}") from None


async def read_message(reader: asyncio.StreamReader, *, request: bool, head: bool = False) -> Message | None:
    m = await read_head(reader)
    if m is not None:
        await read_body(reader, m, request=request, head=head)
    return m
