"""A clock a test moves by hand, for code that takes its clock (the circuit breaker) or its timer (the
start gate) as a parameter: time passes when the test says so, never by sleeping."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Timer:
    """What `call_later` returns: the callback, when it is due, and whether it was cancelled."""

    when: float
    callback: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """`clock()` is the time now (monotonic seconds); `call_later` arms a timer as the event loop's does;
    `advance(seconds)` moves the time and runs the timers that fall due, in order."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now
        self.timers: list[Timer] = []

    def __call__(self) -> float:
        return self.now

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(self.now + delay, callback)
        self.timers.append(timer)
        return timer

    def advance(self, seconds: float) -> None:
        self.now += seconds
        due = sorted((t for t in self.timers if t.when <= self.now and not t.cancelled), key=lambda t: t.when)
        for timer in due:
            self.timers.remove(timer)
            timer.callback()

    @property
    def armed(self) -> list[Timer]:
        """Timers neither run nor cancelled."""
        return [t for t in self.timers if not t.cancelled]
