"""A front on an asyncio loop in a thread of this process: for tests and the benchmark, where one process holds
the client, the front and the model (a run's front is a process of its own: ``harness.aws.front.launch``)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from harness.aws.front.server import Front

T = TypeVar("T")


class FrontThread:
    def __init__(self, front: Front) -> None:
        self.front = front
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="harness-front", daemon=True)
        self._thread.start()
        self.control_port = self.call(front.start())

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def seat(self, user: str) -> str:
        return f"http://127.0.0.1:{self.call(self.front.seat(user))}"

    @staticmethod
    async def _cancel_rest() -> None:
        """The connections' tasks end before the loop does (a task left behind runs into a closed loop)."""
        rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in rest:
            t.cancel()
        await asyncio.gather(*rest, return_exceptions=True)

    @property
    def control_url(self) -> str:
        return f"http://127.0.0.1:{self.control_port}"

    def stop(self) -> None:
        self.call(self.front.stop())
        self.call(self._cancel_rest())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()
