"""A ``concurrent.futures``-style executor on a gevent pool, for the backends inside Locust processes.

Locust stops a user by killing its greenlet. With threading monkey-patched, a
``ThreadPoolExecutor``'s workers and locks are gevent objects, and a user
killed while it waits on a future can leave the executor's internal semaphore
over-released: its worker dies ("Semaphore released too many times"), every
later future of the shared backend waits forever, and the test never stops.
A gevent pool has no such shared state to corrupt: a killed waiter just stops
waiting, and the calls it started finish on their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

import gevent.monkey
import gevent.pool

if TYPE_CHECKING:
    from harness.config.plan import RunPlan


class _Result:
    """What the backends use of a ``Future``: ``result()``."""

    def __init__(self, greenlet: gevent.Greenlet) -> None:
        self._greenlet = greenlet

    def result(self, timeout: float | None = None) -> Any:
        return self._greenlet.get(timeout=timeout)


class GreenletExecutor(Executor):
    """At most ``size`` calls at once, each in its own greenlet."""

    def __init__(self, size: int = 8) -> None:
        self._pool = gevent.pool.Pool(size)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> _Result:  # type: ignore[override]
        return _Result(self._pool.spawn(fn, *args, **kwargs))

    def map(self, fn: Callable[..., Any], *iterables: Iterable[Any], timeout: float | None = None,
            chunksize: int = 1) -> Iterator[Any]:
        started = [self._pool.spawn(fn, *args) for args in zip(*iterables, strict=False)]
        return (g.get(timeout=timeout) for g in started)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if cancel_futures:
            self._pool.kill()
        elif wait:
            self._pool.join()


def pool_size(plan: RunPlan) -> int:
    """Greenlets for a process's backends: 8 shared by its users, unless the scenario moves content N at a time
    (two-phase sync: swamp's 25 uploads / 50 downloads), then N for every user of the fleet (an upper bound:
    the pool must not be what limits the modelled concurrency)."""
    ds = plan.scenario.datastore
    n = max(ds.upload_concurrency, ds.download_concurrency)
    return 8 if n <= 1 else max(8, n * max(plan.locust.users, plan.scenario.fleet.workers))


def executor_for_this_process(size: int = 8) -> Executor | None:
    """A greenlet executor when threads are gevent's (a Locust process); None: the backend's own threads."""
    return GreenletExecutor(size) if gevent.monkey.is_module_patched("threading") else None
