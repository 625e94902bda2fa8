"""Retries with backoff and jitter, and a circuit breaker, for every data source: one policy, one code path.

Why: a source that drops a connection, hits a deadlock, steps down its primary or answers 503 for a
moment should not fail the question, and a source that is dead should answer 503 at once instead of
making every request wait for its timeout.

- What is worth retrying is decided next to each backend: its error mapping raises our safe errors
  (`SourceUnavailable`, `QueryFailed`) with `transient=True` (and `retry_after` when the source said
  how long to wait). Syntax, permission and other permanent errors are never retried.
- `retry_call` is the loop: exponential backoff with full jitter (or the source's `Retry-After`,
  whichever is longer), at most `max_attempts`, and never past the deadline: the request's remaining
  time (`request_deadline`, set by the web layer around each request) or, outside a request, the
  budget the caller gives.
- `SourceGuard` wraps one adapter's queries: retries, then the breaker. After `failure_threshold`
  consecutive failed calls that mean "the source is unwell" (503/504 errors, transient or not) the
  circuit opens and calls fail at once with 503; after `reset_timeout` one probe call is let
  through (half-open): success closes the circuit, failure opens it again. A permanent query error
  proves the source answered, so it resets the count.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .errors import IntentRouterError, SourceBusy, SourceUnavailable

log = logging.getLogger("intent_router.adapters.resilience")

T = TypeVar("T")
Clock = Callable[[], float]

# The monotonic time by which the current request must be answered (None outside a request).
_deadline: ContextVar[float | None] = ContextVar("intent_router_request_deadline", default=None)


@contextlib.contextmanager
def request_deadline(seconds: float) -> Iterator[None]:
    """Retries inside this block (and tasks started from it) stop before `seconds` from now have passed."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining_time() -> float | None:
    """Seconds left for the current request, or None outside one."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - time.monotonic()


class RetrySettings(BaseModel):
    """`retries:` on a data adapter (or an embedding provider)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: int = Field(3, ge=1, le=10, description="attempts in all; 1 turns retries off")
    backoff_initial: float = Field(0.1, ge=0, description="seconds; the first retry waits up to this (full jitter)")
    backoff_max: float = Field(2.0, ge=0, description="cap on one computed backoff (Retry-After may ask for more)")

    @model_validator(mode="after")
    def _ordered(self) -> RetrySettings:
        if self.backoff_max < self.backoff_initial:
            raise ValueError("backoff_max must be at least backoff_initial")
        return self

    def backoff(self, retry: int, rng: Callable[[], float] = random.random) -> float:
        """Full jitter: uniform in [0, min(backoff_max, backoff_initial * 2**(retry-1))]."""
        return rng() * min(self.backoff_max, self.backoff_initial * 2 ** (retry - 1))


class CircuitBreakerSettings(BaseModel):
    """`circuit_breaker:` on a data adapter."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(True, description="false: the breaker is off")
    failure_threshold: int = Field(5, ge=1, le=1000, description="consecutive failed calls that open the circuit")
    reset_timeout: float = Field(30.0, gt=0, description="seconds open before one probe call is let through")


def parse_retry_after(value: str | None) -> float | None:
    """`Retry-After` as seconds: a number of seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())


TRANSIENT_HTTP_STATUSES = frozenset({429, 502, 503, 504})


def transient_http_status(status: int) -> bool:
    """An HTTP answer worth another attempt, for every client of an HTTP service (data sources, embedding and
    rerank services): rate limited (429) or a proxy, overload or gateway-timeout answer (502, 503, 504), which
    say nothing about the request itself. A 500 is the service's own error for this request: the same
    request most likely fails again, so retrying it only multiplies the load on a failing service and spends
    the request's time (it still counts against a source's circuit breaker: `source_unwell`)."""
    return status in TRANSIENT_HTTP_STATUSES


def is_transient(exc: BaseException) -> bool:
    """Set by the backend that raised it: worth another attempt."""
    return bool(getattr(exc, "transient", False))


def retry_after_of(exc: BaseException) -> float | None:
    value = getattr(exc, "retry_after", None)
    return float(value) if isinstance(value, int | float) and value >= 0 else None


def source_unwell(exc: BaseException) -> bool:
    """Counts against the breaker: the source is down, timing out or shedding load."""
    return is_transient(exc) or (isinstance(exc, IntentRouterError) and exc.status in (503, 504))


@dataclass
class RetryOutcome:
    attempts: int = 0
    waited: float = 0.0


async def retry_call(
    fn: Callable[[], Awaitable[T]],
    settings: RetrySettings,
    *,
    budget: float | None = None,
    outcome: RetryOutcome | None = None,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> T:
    """`fn()` again while it raises a transient error, with backoff, within the attempts and the deadline.

    The deadline is the request's (`request_deadline`) when there is one, else `budget` seconds from
    now (None: attempts alone bound it). A wait that would end past the deadline is not started: the
    last error is raised at once. When more than one attempt was made, the error's message says so.
    """
    outcome = outcome if outcome is not None else RetryOutcome()
    request_left = remaining_time()
    left = request_left if request_left is not None else budget
    deadline = None if left is None else time.monotonic() + left
    while True:
        outcome.attempts += 1
        try:
            return await fn()
        except Exception as exc:
            if not is_transient(exc) or outcome.attempts >= settings.max_attempts:
                _note_attempts(exc, outcome.attempts)
                raise
            wait = max(settings.backoff(outcome.attempts), retry_after_of(exc) or 0.0)
            if deadline is not None and time.monotonic() + wait >= deadline:
                log.info("no retry after %s attempt(s): a %.2f s wait would pass the deadline", outcome.attempts, wait)
                _note_attempts(exc, outcome.attempts)
                raise
            log.info("transient failure (attempt %s), retrying in %.3f s: %s", outcome.attempts, wait, exc)
            outcome.waited += wait
            await sleep(wait)


def _note_attempts(exc: Exception, attempts: int) -> None:
    """The client's message says how hard we tried."""
    if attempts > 1 and isinstance(exc, IntentRouterError):
        exc.message = f"{exc.message} (after {attempts} attempts)"
        exc.args = (exc.message,)


State = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """Consecutive-failure breaker with a single half-open probe; the clock is injectable for tests."""

    def __init__(self, settings: CircuitBreakerSettings, clock: Clock = time.monotonic) -> None:
        self.settings = settings
        self._clock = clock
        self._state: State = "closed"
        self.consecutive_failures = 0
        self._opened_at = 0.0
        self._probe_in_flight = False
        self.times_opened = 0

    @property
    def state(self) -> State:
        if self._state == "open" and self._clock() - self._opened_at >= self.settings.reset_timeout:
            return "half_open"
        return self._state

    def why_open(self) -> str:
        """What an open circuit says, in a 503 and in /health."""
        return f"circuit open after {self.consecutive_failures} consecutive failures"

    def retry_in(self) -> float:
        return max(0.0, self.settings.reset_timeout - (self._clock() - self._opened_at))

    def admit(self) -> bool:
        """May a call go to the source now? In half-open, only the first caller (the probe) may."""
        if not self.settings.enabled:
            return True
        state = self.state
        if state == "closed":
            return True
        if state == "half_open" and not self._probe_in_flight:
            self._state = "half_open"
            self._probe_in_flight = True
            return True
        return False

    def record_success(self) -> None:
        self._probe_in_flight = False
        self.consecutive_failures = 0
        self._state = "closed"

    def record_failure(self) -> None:
        self._probe_in_flight = False
        self.consecutive_failures += 1
        if not self.settings.enabled:
            return
        if self._state == "half_open" or self.consecutive_failures >= self.settings.failure_threshold:
            if self._state != "open":
                self.times_opened += 1
            self._state = "open"
            self._opened_at = self._clock()

    def record_cancelled(self) -> None:
        """A probe that was cancelled (request timeout) proves nothing: let the next caller probe."""
        self._probe_in_flight = False

    def snapshot(self) -> dict[str, Any]:
        info: dict[str, Any] = {"state": self.state, "consecutive_failures": self.consecutive_failures}
        if self.state != "closed":
            info["retry_in_seconds"] = round(self.retry_in(), 3)
        return info


@dataclass
class GuardStats:
    calls: int = 0
    attempts: int = 0
    retries: int = 0
    rejected: int = 0  # answered 503 at once by the open circuit
    failures: int = 0


class SourceGuard:
    """Retries plus circuit breaker around one source's queries (one per adapter instance)."""

    def __init__(
        self,
        adapter: str,
        retries: RetrySettings | None = None,
        breaker: CircuitBreakerSettings | None = None,
        *,
        budget: float | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.adapter = adapter
        self.retries = retries or RetrySettings(max_attempts=1)
        self.breaker = CircuitBreaker(breaker or CircuitBreakerSettings(enabled=False), clock)
        self.budget = budget
        self.stats = GuardStats()

    @classmethod
    def for_settings(cls, settings: Any) -> SourceGuard:
        """From an adapter's settings; types without `retries`/`circuit_breaker` (composites) get neither."""
        retries = getattr(settings, "retries", None)
        timeout = getattr(settings, "query_timeout", None)
        budget = None if retries is None or timeout is None else retries.max_attempts * timeout
        return cls(settings.name, retries, getattr(settings, "circuit_breaker", None), budget=budget)

    async def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """`fn()` through the breaker and the retry loop; an open circuit answers 503 without calling."""
        self.stats.calls += 1
        if not self.breaker.admit():
            self.stats.rejected += 1
            raise SourceUnavailable(
                self.adapter,
                f"{self.breaker.why_open()}; next try in {self.breaker.retry_in():.1f} s",
            )
        outcome = RetryOutcome()
        try:
            result = await retry_call(fn, self.retries, budget=self.budget, outcome=outcome)
        except SourceBusy:  # our own bulkhead shed the query: says nothing about the source's health
            self.breaker.record_cancelled()
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception):  # cancelled (the request's timeout) or closed: proves nothing,
                self.breaker.record_cancelled()  # and a half-open probe must not stay "in flight" for ever
                raise
            self.stats.failures += 1
            if source_unwell(exc):
                self.breaker.record_failure()
                if self.breaker.state == "open":
                    log.warning("adapter %s: circuit open (%s)", self.adapter, self.breaker.snapshot())
            else:
                self.breaker.record_success()  # the source answered: the query itself was wrong
            raise
        finally:
            self.stats.attempts += outcome.attempts
            self.stats.retries += max(0, outcome.attempts - 1)
        self.breaker.record_success()
        return result

    def snapshot(self) -> dict[str, Any]:
        """Circuit state and counters, for health and statistics."""
        return {"circuit": self.breaker.snapshot(), **self.stats.__dict__}
