"""Virtual time for multi-threaded code: a clock that moves only when every thread is waiting on it.

``FakeClock`` is enough for one thread: whoever sleeps moves time. With several
threads that is wrong (two threads sleeping 1 s each would move time by 2 s).
``VirtualClock`` keeps one virtual time for a set of *participant* threads
(the thread inside ``running()`` and every thread started with ``start``). A
participant that sleeps, or waits on a ``condition()`` with a timeout, blocks;
when no participant is left running, time jumps to the earliest wake-up and
those sleepers go on. Work that takes real CPU time (a moto call, a SQLite
write) takes no virtual time, so what a test measures in virtual time (rates,
token counts, the sleeps requested) does not depend on how busy the machine is.

Every requested sleep is kept in ``sleeps`` (in order) for tests to assert on.
An exception in a participant thread is re-raised in the thread inside
``running()``; a participant blocked on something the clock cannot see (a
plain lock held by a sleeper) stops time, which ``stall_s`` of real time turns
into an error instead of a hung test.

Production code takes this through the same interfaces it takes the real
thing through: ``Clock`` (``now``, ``sleep``) and ``Threads`` (``start``,
``condition``; ``SystemThreads`` is the real one).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol


class Waitable(Protocol):
    """The part of ``threading.Condition`` the pacing engine uses."""

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: object) -> None: ...

    def wait(self, timeout: float | None = None) -> bool: ...

    def notify_all(self) -> None: ...


class Threads(Protocol):
    """How code that runs work concurrently starts threads and waits for each other."""

    def start(self, fn: Callable[..., Any], *args: Any, name: str | None = None) -> None: ...

    def condition(self) -> Waitable: ...


class SystemThreads:
    """Real threads and real condition variables."""

    def start(self, fn: Callable[..., Any], *args: Any, name: str | None = None) -> None:
        threading.Thread(target=fn, args=args, name=name, daemon=True).start()

    def condition(self) -> threading.Condition:
        return threading.Condition()


class VirtualClockError(RuntimeError):
    """The virtual clock stopped the run: a participant failed, time ran past the limit, or time stalled."""


class _Waiter:
    __slots__ = ("deadline", "woken", "notified")

    def __init__(self, deadline: float) -> None:
        self.deadline, self.woken, self.notified = deadline, False, False


class VirtualClock:
    """A ``Clock`` and ``Threads`` whose time advances only when every participant is blocked on it."""

    def __init__(self, start: float = 1_700_000_000.0, *, limit_s: float = 3600.0, stall_s: float = 60.0) -> None:
        self.start_time = start
        self.limit_s, self.stall_s = limit_s, stall_s
        self.sleeps: list[float] = []
        self._t = start
        self._cv = threading.Condition()
        self._active = 0  # participants running (not blocked on this clock)
        self._waiters: list[_Waiter] = []
        self._threads: list[threading.Thread] = []
        self._errors: list[tuple[str, BaseException]] = []
        self._closed = False
        self._ops = 0  # clock operations so far: the stall watchdog's sign of life
        self._local = threading.local()

    # ---- Clock -------------------------------------------------------------------
    def now(self) -> float:
        with self._cv:
            return self._t

    def elapsed(self) -> float:
        """Virtual seconds since the clock started."""
        return self.now() - self.start_time

    def sleep(self, seconds: float) -> None:
        with self._cv:
            self.sleeps.append(seconds)
            if seconds <= 0 or self._closed:
                self._raise_if_failed()
                return
            # at least one representable step: at epoch-sized times a tiny wait would otherwise not move time
            w = _Waiter(max(self._t + seconds, math.nextafter(self._t, math.inf)))
            self._block(w)
            self._wait_for(w)

    # ---- Threads -----------------------------------------------------------------
    def start(self, fn: Callable[..., Any], *args: Any, name: str | None = None) -> None:
        """Run ``fn(*args)`` in a new participant thread."""
        with self._cv:
            self._raise_if_failed()
            self._active += 1
            self._ops += 1
        t = threading.Thread(target=self._participate, args=(fn, args), name=name, daemon=True)
        with self._cv:
            self._threads.append(t)
        t.start()

    def condition(self) -> VirtualCondition:
        return VirtualCondition(self)

    def at(self, elapsed_s: float, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)`` in a participant thread when virtual time reaches ``elapsed_s`` from the start."""

        def timer() -> None:
            self.sleep(self.start_time + elapsed_s - self.now())
            if not self._closed:
                fn(*args)

        self.start(timer, name=f"vclock-at-{elapsed_s:g}")

    @contextmanager
    def running(self, join_s: float = 30.0) -> Iterator[VirtualClock]:
        """The calling thread takes part while inside; on leaving, stop timers, join threads, re-raise errors."""
        with self._cv:
            self._active += 1
            self._local.participant = True
        try:
            yield self
        finally:
            with self._cv:
                self._active -= 1
                self._local.participant = False
                self._closed = True  # sleepers wake now and pending `at` calls are dropped
                for w in list(self._waiters):
                    self._wake(w)
                self._cv.notify_all()
                threads = list(self._threads)
            deadline = time.monotonic() + join_s
            for t in threads:
                t.join(max(0.0, deadline - time.monotonic()))
        # Only reached when the body itself did not raise: a participant's failure is the test's failure.
        with self._cv:
            if self._errors:
                name, err = self._errors[0]
                raise VirtualClockError(f"participant thread {name!r} failed: {err!r}") from err
            alive = [t.name for t in threads if t.is_alive()]
        if alive:
            raise VirtualClockError(f"participant threads still running {join_s:g} s after the end: {alive}")

    # ---- internals (callers hold self._cv) ---------------------------------------
    def _participate(self, fn: Callable[..., Any], args: tuple) -> None:
        self._local.participant = True
        try:
            fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed to the thread in running()
            with self._cv:
                if not isinstance(e, VirtualClockError):
                    self._errors.append((threading.current_thread().name, e))
        finally:
            with self._cv:
                self._active -= 1
                self._ops += 1
                self._advance()
                self._cv.notify_all()

    def _raise_if_failed(self) -> None:
        if self._errors:
            name, err = self._errors[0]
            raise VirtualClockError(f"participant thread {name!r} failed: {err!r}") from err
        if self._t - self.start_time > self.limit_s:
            raise VirtualClockError(f"virtual time passed its limit of {self.limit_s:g} s")

    def _block(self, w: _Waiter) -> None:
        if not getattr(self._local, "participant", False):
            raise VirtualClockError(f"thread {threading.current_thread().name!r} waits on the virtual clock but was "
                                    "not started by it (use clock.start or clock.running)")
        self._raise_if_failed()
        self._waiters.append(w)
        self._active -= 1
        self._ops += 1
        self._advance()

    def _wait_for(self, w: _Waiter) -> None:
        seen, since = self._ops, time.monotonic()
        while not w.woken:
            if self._closed:
                self._wake(w)
                break
            self._cv.wait(0.5)
            if self._ops != seen:
                seen, since = self._ops, time.monotonic()
            elif time.monotonic() - since > self.stall_s:
                self._wake(w)
                err = VirtualClockError(f"virtual time stalled for {self.stall_s:g} s of real time with "
                                        f"{self._active - 1} participant(s) not waiting on the clock")
                self._errors.append((threading.current_thread().name, err))
                raise err
        self._raise_if_failed()

    def _wake(self, w: _Waiter, notified: bool = False) -> None:
        if w.woken:
            return
        w.woken, w.notified = True, notified
        self._waiters.remove(w)
        self._active += 1
        self._ops += 1

    def _advance(self) -> None:
        """Nobody running: move time to the earliest wake-up and wake everyone due then."""
        if self._active > 0 or not self._waiters:
            return
        t = min(w.deadline for w in self._waiters)
        if math.isinf(t):
            return  # everyone waits for a notify that nobody is left to send: the watchdog reports it
        self._t = max(self._t, t)
        for w in [w for w in self._waiters if w.deadline <= self._t]:
            self._wake(w)
        self._cv.notify_all()


class VirtualCondition:
    """A condition variable whose timed waits run on virtual time (and count as blocked on the clock)."""

    def __init__(self, clock: VirtualClock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._waiters: list[_Waiter] = []

    def __enter__(self) -> VirtualCondition:
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def wait(self, timeout: float | None = None) -> bool:
        """Release the lock until notified or ``timeout`` virtual seconds pass; True if notified."""
        clock = self._clock
        with clock._cv:
            w = _Waiter(clock._t + timeout if timeout is not None else math.inf)
            clock._block(w)
            self._waiters.append(w)
        self._lock.release()
        try:
            with clock._cv:
                clock._wait_for(w)
        finally:
            self._lock.acquire()
            if w in self._waiters:
                self._waiters.remove(w)
        return w.notified

    def notify_all(self) -> None:
        clock = self._clock
        with clock._cv:
            for w in self._waiters:
                clock._wake(w, notified=True)
            self._waiters.clear()
            clock._cv.notify_all()
