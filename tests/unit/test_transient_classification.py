"""Which backend errors are worth a retry, decided next to each backend (real driver exception classes)."""

from __future__ import annotations

import pytest
from pymongo.errors import (
    AutoReconnect,
    NetworkTimeout,
    NotPrimaryError,
    OperationFailure,
    ServerSelectionTimeoutError,
)

from server.adapters.mongodb import is_transient_error as mongo_transient
from server.resilience import parse_retry_after


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (NotPrimaryError("not primary"), True),  # the primary stepped down
        (AutoReconnect("connection reset"), True),
        (NetworkTimeout("socket timed out"), True),
        (OperationFailure("interrupted due to repl state change", code=11602), True),
        (OperationFailure("primary stepped down", code=189), True),
        (OperationFailure("shutdown in progress", code=91), True),
        (OperationFailure("retryable", code=2, details={"errorLabels": ["RetryableReadError"]}), True),
        (ServerSelectionTimeoutError("no servers"), False),  # already waited its full timeout
        (OperationFailure("not authorized", code=13), False),
        (OperationFailure("unknown operator $foo", code=2), False),
        (OperationFailure("failed to parse", code=9), False),
    ],
)
def test_mongo_transient_errors(error: Exception, transient: bool):
    assert mongo_transient(error) is transient


@pytest.mark.parametrize(
    ("header", "expected"),
    [("3", 3.0), ("0.5", 0.5), ("-4", 0.0), ("soon", None), ("", None), (None, None)],
)
def test_retry_after_seconds(header: str | None, expected: float | None):
    assert parse_retry_after(header) == expected


def test_retry_after_http_date():
    from datetime import UTC, datetime, timedelta
    from email.utils import format_datetime

    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 27 < (parse_retry_after(later) or 0) <= 30
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: no wait
