"""Dashboard sessions: with auth on, the login form posts the admin or stats key once; the server
replies with an HttpOnly, SameSite=Strict session cookie (an HMAC over role and expiry with a
per-process secret, 12 h), so the key never sits in a URL, in browser history or in the page's
JavaScript. API clients send the key as usual (Bearer / X-API-Key)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from ..auth import Principal, authenticate, require
from ..runtime.settings import AuthSettings

COOKIE = "ir_dashboard"
SESSION_SECONDS = 12 * 3600


class DashboardSessions:
    def __init__(self) -> None:
        self._secret = secrets.token_bytes(32)

    def _sign(self, role: str, expires: int) -> str:
        mac = hmac.new(self._secret, f"{role}.{expires}".encode(), hashlib.sha256).hexdigest()
        return f"{role}.{expires}.{mac}"

    def session(self, request: web.Request) -> Principal | None:
        value = request.cookies.get(COOKIE)
        if not value or value.count(".") != 2:
            return None
        role, expires, _ = value.split(".")
        if role not in ("admin", "stats") or not expires.isdigit() or int(expires) < time.time():
            return None
        if not hmac.compare_digest(value, self._sign(role, int(expires))):
            return None
        return Principal("dashboard", role, ())

    def principal(self, request: web.Request, auth: AuthSettings) -> Principal:
        """The dashboard session if there is one, else the request's key."""
        return self.session(request) or authenticate(request, auth)

    def login(self, key: str, auth: AuthSettings, secure: bool) -> web.HTTPSeeOther:
        """The redirect that sets the session cookie; raises an IntentRouterError for a wrong key."""
        principal = authenticate(_KeyOnly(key), auth)  # type: ignore[arg-type]
        require(principal, "stats")
        expires = int(time.time()) + SESSION_SECONDS
        response = web.HTTPSeeOther("/dashboard")
        response.set_cookie(
            COOKIE,
            self._sign(principal.role, expires),
            max_age=SESSION_SECONDS,
            httponly=True,
            samesite="Strict",
            secure=secure,
            path="/",
        )
        return response


class _KeyOnly:
    """What `authenticate` reads of a request (its headers), for a key typed into the login form."""

    def __init__(self, key: str) -> None:
        self.headers = CIMultiDictProxy(CIMultiDict({"Authorization": f"Bearer {key}"}))
