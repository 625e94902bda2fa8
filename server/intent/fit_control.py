"""Cooperative cancellation of fits: a long fit asks `cancelled()` between its steps and stops at once.

Fits run on a worker thread that Python cannot interrupt; at shutdown (or when a newer fit is wanted) the
owner flips what `cancelled` reads, and the fit raises FitCancelled at its next check (a step of a few
milliseconds to a fraction of a second), so the process can exit without waiting for the fit to end.
"""

from __future__ import annotations

from collections.abc import Callable


class FitCancelled(Exception):
    """The fit was asked to stop (shutdown, or a newer fit for the same composite)."""


class NeedsFullFit(ValueError):
    """An incremental update is not possible (or not accurate enough) here: fit from scratch."""


def never() -> bool:
    return False


def check(cancelled: Callable[[], bool]) -> None:
    """Raise FitCancelled when `cancelled()` says so."""
    if cancelled():
        raise FitCancelled
