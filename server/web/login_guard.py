"""Guards on the dashboard's login and logout forms: same-origin only, and a bounded number of login
attempts per client address (a key cannot be guessed at network speed).

Current browsers send `Sec-Fetch-Site` with every request (a page cannot set it): only `same-origin`
(or `none`, the user's own navigation) may post. Older ones send `Origin` (or at least `Referer`),
compared with the `Host` the request was sent to (a proxy in front must pass it on unchanged). So a
cross-site form that tries to log a victim in with the attacker's key, or out, is refused; a request
with none of these headers is not from a browser page and is let through (API clients use their key
directly anyway). The dashboard's pages use `Referrer-Policy: same-origin`, under which browsers send
the real `Origin` on their own forms (with `no-referrer` they send `Origin: null`).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from urllib.parse import urlsplit

from aiohttp import web

from ..errors import Forbidden, TooManyRequests

LOGIN_ATTEMPTS = 10  # per client address ...
LOGIN_WINDOW = 60.0  # ... per this many seconds
TRACKED_CLIENTS = 10_000  # addresses remembered at most (the least recently seen are forgotten first)


def check_same_origin(request: web.Request) -> None:
    """403 unless the form was posted from a page of this server (or not from a browser page at all)."""
    site = request.headers.get("Sec-Fetch-Site")  # sent by current browsers, cannot be set by a page
    if site is not None:
        if site in ("same-origin", "none"):  # none: the user's own navigation, not a page
            return
        raise _CROSS_ORIGIN
    origin = request.headers.get("Origin") or request.headers.get("Referer")
    if origin is None:
        return
    host = urlsplit(origin).netloc.lower() if origin != "null" else ""
    if not host or host != request.host.lower():
        raise _CROSS_ORIGIN


_CROSS_ORIGIN = Forbidden("the dashboard's forms only accept posts from the dashboard's own pages")


class LoginRateLimit:
    """A sliding window of attempt times per client address, in bounded memory."""

    def __init__(
        self, attempts: int = LOGIN_ATTEMPTS, window: float = LOGIN_WINDOW, clients: int = TRACKED_CLIENTS
    ) -> None:
        self.attempts = attempts
        self.window = window
        self.clients = clients
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()

    def check(self, client: str, now: float | None = None) -> None:
        """Count one attempt; 429 (with the seconds until the next one is allowed) when over the limit."""
        now = time.monotonic() if now is None else now
        times = self._seen.pop(client, None) or deque()
        while times and times[0] <= now - self.window:
            times.popleft()
        self._seen[client] = times  # most recently seen last
        while len(self._seen) > self.clients:
            self._seen.popitem(last=False)
        if len(times) >= self.attempts:
            wait = max(1, math.ceil(times[0] + self.window - now))
            raise TooManyRequests(f"too many login attempts; try again in {wait} s", retry_after=wait)
        times.append(now)
