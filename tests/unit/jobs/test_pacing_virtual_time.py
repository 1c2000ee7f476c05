"""The virtual clock the pacing tests run on: time moves only when every participant waits on it."""

from __future__ import annotations

import threading
import time

import pytest

from harness.core.virtual_time import VirtualClock, VirtualClockError


def test_concurrent_sleepers_share_one_time():
    """Two threads sleeping 1 s each take 1 virtual second, not 2 (what a FakeClock would do)."""
    vc = VirtualClock(start=100.0)
    woke: list[tuple[str, float]] = []

    def sleeper(name: str, s: float) -> None:
        vc.sleep(s)
        woke.append((name, vc.elapsed()))

    with vc.running():
        vc.start(sleeper, "a", 1.0)
        vc.start(sleeper, "b", 1.0)
        vc.start(sleeper, "c", 0.25)
        vc.sleep(2.0)
        assert vc.elapsed() == 2.0
    assert sorted(woke) == [("a", 1.0), ("b", 1.0), ("c", 0.25)]
    assert sorted(vc.sleeps) == [0.25, 1.0, 1.0, 2.0]


def test_time_stands_still_while_a_participant_works():
    vc = VirtualClock(start=0.0)
    seen: list[float] = []

    def busy() -> None:
        time.sleep(0.2)  # real work: takes no virtual time
        seen.append(vc.elapsed())

    with vc.running():
        vc.start(busy)
        vc.sleep(0.001)  # cannot move time past the busy thread's work
        seen.append(vc.elapsed())
    assert seen == [0.0, 0.001]


def test_condition_wait_wakes_on_notify_or_on_virtual_timeout():
    vc = VirtualClock()
    cond = vc.condition()
    out: list[tuple[bool, float]] = []

    def waiter(timeout: float) -> None:
        with cond:
            out.append((cond.wait(timeout), vc.elapsed()))

    with vc.running():
        vc.start(waiter, 5.0)
        vc.sleep(1.0)
        with cond:
            cond.notify_all()  # the 5 s waiter is notified at t = 1
        vc.start(waiter, 0.5)
        vc.sleep(2.0)  # nobody notifies this one: it times out at t = 1.5
    assert out == [(True, 1.0), (False, 1.5)]


def test_at_runs_at_its_virtual_time_and_is_dropped_after_the_end():
    vc = VirtualClock()
    calls: list[float] = []
    with vc.running():
        vc.at(3.0, lambda: calls.append(vc.elapsed()))
        vc.at(100.0, lambda: calls.append(vc.elapsed()))
        vc.sleep(10.0)
    assert calls == [3.0]


def test_an_exception_in_a_participant_is_raised_in_the_main_thread():
    vc = VirtualClock()

    def boom() -> None:
        raise ValueError("job thread crashed")

    with pytest.raises(VirtualClockError, match="job thread crashed"), vc.running():
        vc.start(boom, name="job-A")
        vc.sleep(1.0)


def test_a_sleep_from_an_unknown_thread_is_refused():
    vc = VirtualClock()
    errors: list[BaseException] = []

    def outsider() -> None:
        try:
            vc.sleep(1.0)
        except VirtualClockError as e:
            errors.append(e)

    t = threading.Thread(target=outsider)
    t.start()
    t.join(5)
    assert errors and "not started by it" in str(errors[0])


def test_a_stall_is_an_error_not_a_hang():
    """A participant blocked on a plain lock held by a sleeper stops time: reported after stall_s."""
    vc = VirtualClock(stall_s=0.5)
    lock = threading.Lock()

    def holder() -> None:
        with lock:
            vc.sleep(1.0)

    def blocked() -> None:
        with lock:
            pass

    with pytest.raises(VirtualClockError, match="stalled"), vc.running():
        vc.start(holder)
        vc.sleep(0.1)
        vc.start(blocked)
        vc.sleep(5.0)
