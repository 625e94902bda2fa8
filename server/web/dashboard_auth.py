"""Dashboard sessions: with auth on, the login form posts the admin or stats key once; the server
replies with an HttpOnly, SameSite=Strict session cookie (an HMAC with a per-process secret over
role, expiry and a hash of the key that role has now, 12 h), so the key never sits in a URL, in
browser history or in the page's JavaScript. Because the MAC covers the current key, rotating or
removing that key (by reload) ends every session it opened. API clients send the key as usual
(Bearer / X-API-Key).

The cookie is parsed strictly (ASCII digits, bounded length, hex MAC): anything else is simply no
session, never an exception.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import time

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from ..auth import Principal, Role, authenticate, require
from ..auth.settings import AuthSettings
from .redirects import see_other

COOKIE = "ir_dashboard"
SESSION_SECONDS = 12 * 3600
_COOKIE_SHAPE = re.compile(rf"({Role.ADMIN}|{Role.STATS})\.([0-9]{{1,12}})\.([0-9a-f]{{64}})")  # the dashboard's roles


def key_fingerprint(role: Role, auth: AuthSettings) -> str | None:
    """A hash of the key a role has now (its variable's name and value); None if the role has none."""
    env = auth.admin_key_env if role == Role.ADMIN else auth.stats_key_env
    value = os.environ.get(env) if env else None
    if not value:
        return None
    return hashlib.sha256(f"{env}\0{value}".encode()).hexdigest()


class DashboardSessions:
    def __init__(self) -> None:
        self._secret = secrets.token_bytes(32)

    def _mac(self, role: Role, expires: int, fingerprint: str) -> str:
        return hmac.new(self._secret, f"{role}.{expires}.{fingerprint}".encode(), hashlib.sha256).hexdigest()

    def session(self, request: web.Request, auth: AuthSettings) -> Principal | None:
        match = _COOKIE_SHAPE.fullmatch(request.cookies.get(COOKIE, ""))
        if match is None:
            return None
        role, expires, mac = Role(match.group(1)), int(match.group(2)), match.group(3)
        fingerprint = key_fingerprint(role, auth)
        if expires < time.time() or fingerprint is None:
            return None
        if not hmac.compare_digest(mac.encode(), self._mac(role, expires, fingerprint).encode()):
            return None
        return Principal("dashboard", role, ())

    def principal(self, request: web.Request, auth: AuthSettings) -> Principal:
        """The dashboard session if there is one, else the request's key."""
        return self.session(request, auth) or authenticate(request, auth)

    def login(self, key: str, auth: AuthSettings, secure: bool) -> web.HTTPSeeOther:
        """The redirect that sets the session cookie; raises an IntentRouterError for a wrong key."""
        principal = authenticate(_KeyOnly(key), auth)  # type: ignore[arg-type]
        require(principal, Role.STATS)
        fingerprint = key_fingerprint(principal.role, auth)
        if fingerprint is None:  # cannot happen: the key just matched the role's variable
            raise RuntimeError("the key's role has no key")
        expires = int(time.time()) + SESSION_SECONDS
        response = see_other("/dashboard")
        response.set_cookie(
            COOKIE,
            f"{principal.role}.{expires}.{self._mac(principal.role, expires, fingerprint)}",
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
