"""The front's connections to one upstream (a stand-in, or a user's own local endpoint), kept alive and reused."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

from harness.aws.front.wire import Message, WireError, read_message

IDLE_MAX = 256  # idle connections kept per upstream


class Upstream:
    """``http://host:port`` of one service; ``send`` forwards one request and returns the answer whole."""

    def __init__(self, url: str) -> None:
        u = urlsplit(url)
        if u.scheme != "http" or not u.hostname:
            raise ValueError(f"the front forwards to http:// endpoints only, got {url!r}")
        self.url = url.rstrip("/")
        self.host, self.port = u.hostname, u.port or 80
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(self.host, self.port, limit=1 << 20)

    async def send(self, data: bytes, *, head: bool = False) -> Message:
        """Send a request's bytes; a reused connection the upstream closed meanwhile is retried once on a new
        one (nothing of it was answered, so nothing was applied twice)."""
        for reused in (True, False):
            if reused and not self._idle:
                continue
            reader, writer = self._idle.pop() if reused else await self._connect()
            try:
                writer.write(data)
                answer = await read_message(reader, request=False, head=head)
            except (ConnectionError, WireError, asyncio.IncompleteReadError):
                writer.close()
                if reused:
                    continue
                raise
            if answer is None:
                writer.close()
                if reused:
                    continue
                raise WireError("the upstream closed the connection without an answer")
            if answer.close or len(self._idle) >= IDLE_MAX:
                writer.close()
            else:
                self._idle.append((reader, writer))
            return answer
        raise WireError("unreachable")

    def close(self) -> None:
        for _, w in self._idle:
            w.close()
        self._idle.clear()
