"""What a command prints for the failures it expects (a bad config, a source down at start, a missing
file): a message that names the file, line or adapter, never a traceback. `main` and each `serve
--workers` worker end this way."""

from __future__ import annotations

import sys

from ..config.errors import ConfigError
from ..errors import IntentRouterError

# what `report` prints without a traceback; `main` catches these
EXPECTED = (ConfigError, IntentRouterError, OSError, ValueError)


def report(exc: BaseException) -> int | None:
    """Print `exc` for the user and return the exit status (1), or None when it is not an expected failure."""
    if isinstance(exc, ConfigError):
        print(f"configuration errors ({len(exc.issues)}):", file=sys.stderr)
        for issue in exc.issues:
            print(f"  {issue}", file=sys.stderr)
        return 1
    if isinstance(exc, IntentRouterError):  # a source down at start, an unknown adapter: say which
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    if isinstance(exc, (OSError, ValueError)):  # e.g. fit-thresholds' labelled file missing, a port in use
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return None
