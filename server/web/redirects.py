"""Redirects the dashboard answers with: 303 See Other to a page of the server, with a short HTML body
that links to it (what /openapi.json documents), instead of aiohttp's plain-text "303: See Other"."""

from __future__ import annotations

import html

from aiohttp import web


def see_other(location: str) -> web.HTTPSeeOther:
    """Raise or return it; `location` is one of the server's own paths (never a client's input)."""
    link = html.escape(location, quote=True)
    page = f'<!doctype html><title>See other</title><p><a href="{link}">Continue to {link}</a></p>\n'
    return web.HTTPSeeOther(location, text=page, content_type="text/html")
