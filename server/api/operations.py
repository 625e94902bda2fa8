"""The operation table of the OpenAPI document: per route its method, models, statuses and auth. Only this
is written by hand; every schema is generated from the models named here (openapi.py builds the document).
An endpoint that starts answering a new status must say so in its row.

Statuses come in three kinds: `errors` (answered with ErrorResponse whatever the auth), `key_errors`
(ErrorResponse, only on a server with keys: no key, a wrong key, a role or adapter the key lacks) and
`replies` (other bodies, some only with keys). A server without keys gets a document without them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from .jsonrpc import JsonRpcErrorResponse, JsonRpcMessage
from .requests import (
    CatalogueQuery,
    ForgetQuestionsRequest,
    LoginForm,
    QueryRequest,
    ReloadQuery,
    StatisticsQuery,
    TestRoutingRequest,
)
from .responses import (
    Catalogue,
    ClusterResponse,
    ErrorResponse,
    ForgetQuestionsResponse,
    HealthResponse,
    LoadStatusView,
    QueryResponse,
    RoutingExplanation,
    StatisticsResponse,
)

Json = dict[str, Any]
# what a body's schema is made from: a model or TypedDict (generated), a literal schema, or None (no schema)
Shape = type | Json | None

ERROR_TEXT = {
    400: "Bad request: the body is not a JSON object, a field is missing or invalid, or a query parameter is wrong",
    401: "No API key, or an unknown one",
    403: "The key's role or adapter list does not allow this",
    404: "Unknown adapter",
    408: "The request body did not arrive within `server.body_timeout` (`body_timeout`; the connection is closed)",
    409: "`execution: fan_out` asked of an adapter that is not a composite (`not_a_composite`)",
    413: "Request body larger than 64 KiB",
    422: "The configuration was refused",
    429: "Too many requests",
    502: "The data source answered but the query failed (`query_failed`)",
    503: "The data source (or the routing log) cannot be reached (`source_unavailable`, `stats_unavailable`)",
    504: "The request or the source query timed out (`timeout`, `source_timeout`)",
}
CROSS_ORIGIN = "Posted from a page of another site (the dashboard's forms accept posts from its own pages only)"
SECURITY_SCHEMES: Json = {
    "bearerAuth": {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer <key>"},
    "apiKeyAuth": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
    "dashboardSession": {
        "type": "apiKey",
        "in": "cookie",
        "name": "ir_dashboard",
        "description": "the session cookie /dashboard/login sets for an admin or stats key",
    },
}
KEY_AUTH: tuple[Json, ...] = ({"bearerAuth": []}, {"apiKeyAuth": []})
STATS_AUTH: tuple[Json, ...] = (*KEY_AUTH, {"dashboardSession": []})
KEY_ERRORS = (401, 403)
QUESTION_ERRORS = (400, 404, 408, 409, 413, 502, 503, 504)
HTML = "text/html"
LOCATION = ("Location", "where to go next")
SESSION_HEADER = "Mcp-Session-Id"
MCP_ERROR = (("application/json", JsonRpcErrorResponse),)
JSON_ERROR = (("application/json", ErrorResponse),)


@dataclass(frozen=True)
class Reply:
    """A response other than the 200 and the ErrorResponse statuses."""

    status: int
    description: str
    content: tuple[tuple[str, Shape], ...] = ()  # (media type, shape); () = no body
    headers: tuple[tuple[str, str], ...] = ()  # (name, description) of response headers
    keys_only: bool = False  # answered only by a server with keys


@dataclass(frozen=True)
class Header:
    """A request header parameter."""

    name: str
    description: str
    required: bool = False


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    operation_id: str
    summary: str
    description: str = ""
    request: type[BaseModel] | type | None = None  # the body's model
    request_media: str = "application/json"
    request_keys_only: bool = False  # without keys the body is not read at all
    query: type[BaseModel] | None = None  # query-string parameters, one per field
    headers: tuple[Header, ...] = ()
    ok: Shape = None  # the 200 body as `ok_media`, or no schema
    ok_media: tuple[str, ...] = ("application/json",)  # () = no 200 at all (see replies)
    errors: tuple[int, ...] = ()  # statuses answered with ErrorResponse
    key_errors: tuple[int, ...] = ()  # the same, only with keys
    replies: tuple[Reply, ...] = ()
    security: tuple[Json, ...] = ()  # () = no key needed


def _redirect(status: int, text: str, keys_only: bool = False, cookie: bool = False) -> Reply:
    headers = (
        (LOCATION, ("Set-Cookie", "the dashboard session (HttpOnly, SameSite=Strict, 12 h)")) if cookie else (LOCATION,)
    )
    return Reply(status, text, ((HTML, None),), headers, keys_only)


MCP_DESCRIPTION = (
    "The Model Context Protocol over streamable HTTP (the MCP specification's transport): JSON-RPC 2.0 messages; "
    "tools `ask`, `explain_routing` and `list_templates`, scoped to the key. A session starts with an "
    "`initialize` request (its answer carries `Mcp-Session-Id`); every other message carries that header. "
    "Clients also send `MCP-Protocol-Version`. With `serve --workers N` (N > 1) every request stands alone."
)
MCP_REPLIES = (
    Reply(400, "Not one JSON-RPC 2.0 message, or (without Mcp-Session-Id) anything but `initialize`", MCP_ERROR),
    Reply(404, "Unknown or ended MCP session (Mcp-Session-Id)", MCP_ERROR),
    Reply(406, "The Accept header allows neither application/json nor text/event-stream", MCP_ERROR),
    Reply(503, "MCP could not start (see /health `mcp`)", JSON_ERROR),
)
MCP_SESSION = Header(SESSION_HEADER, "the session an `initialize` answer opened", required=True)

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "post",
        "/v1/query",
        "query",
        "Answer a question",
        "Routes the question to one template, fills its parameters and runs it; or says what is missing "
        "(`needs_clarification`), that two templates are too close (`ambiguous`) or that nothing matches.",
        request=QueryRequest,
        ok=QueryResponse,
        errors=QUESTION_ERRORS,
        key_errors=KEY_ERRORS,
        security=KEY_AUTH,
    ),
    Operation(
        "post",
        "/v1/test_routing",
        "testRouting",
        "Explain the routing of a question",
        "Every candidate with its scores and the decision; nothing runs on a data source. Each candidate "
        'shows its first example only unless `"detail": "full"`.',
        request=TestRoutingRequest,
        ok=RoutingExplanation,
        errors=QUESTION_ERRORS,
        key_errors=KEY_ERRORS,
        security=KEY_AUTH,
    ),
    Operation(
        "get",
        "/v1/templates",
        "listTemplates",
        "The template catalogue",
        "Per adapter the templates a key may query, with example questions and parameters as JSON Schema.",
        query=CatalogueQuery,
        ok=Catalogue,
        errors=(400, 404),
        key_errors=KEY_ERRORS,
        security=KEY_AUTH,
    ),
    Operation(
        "get",
        "/v1/routing/statistics",
        "routingStatistics",
        "Routing statistics",
        "The adapter's description, figures from the routing log over a window, and the config status "
        "(a stats or admin key).",
        query=StatisticsQuery,
        ok=StatisticsResponse,
        errors=(400, 404, 503),
        key_errors=KEY_ERRORS,
        security=STATS_AUTH,
    ),
    Operation(
        "post",
        "/v1/routing/unmatched/forget",
        "forgetUnmatchedQuestions",
        "Forget unmatched questions",
        "Removes the text of these questions from the routing log's no_match entries, so they leave the "
        "unmatched-questions list (the dashboard's Dismiss and Clear list); the entries still count. A stats "
        "or admin key; from a browser, only the dashboard's own pages may post.",
        request=ForgetQuestionsRequest,
        ok=ForgetQuestionsResponse,
        errors=(400, 403, 408, 413, 503),
        key_errors=KEY_ERRORS,
        security=STATS_AUTH,
    ),
    Operation(
        "get",
        "/health",
        "health",
        "Liveness of every adapter and of the configuration",
        "With auth on, without a key only `status` is answered; the details need a valid key (any role).",
        ok=HealthResponse,
        key_errors=(401,),
        security=({}, *KEY_AUTH),
    ),
    Operation(
        "post",
        "/admin/reload",
        "reload",
        "Reload the configuration now",
        "The new configuration serves only if it loads completely and keeps what clients use (see "
        "`allow_removal`) and the start's auth rules; otherwise the old one keeps serving and the answer is 422 "
        "with the errors (file:line).",
        query=ReloadQuery,
        ok=LoadStatusView,
        errors=(400,),
        key_errors=KEY_ERRORS,
        replies=(Reply(422, ERROR_TEXT[422], (("application/json", LoadStatusView),)),),
        security=KEY_AUTH,
    ),
    Operation(
        "get",
        "/v1/cluster",
        "cluster",
        "The replicas of this deployment",
        "With cluster.enabled: the replicas seen within three heartbeats, each with its config hash, uptime and "
        "load (admin key). With the bus engine down only the answering replica is listed.",
        ok=ClusterResponse,
        key_errors=KEY_ERRORS,
        security=KEY_AUTH,
    ),
    Operation(
        "get",
        "/metrics",
        "metrics",
        "Prometheus metrics",
        "The Prometheus text exposition format (a stats or admin key).",
        ok_media=("text/plain",),
        key_errors=KEY_ERRORS,
        security=KEY_AUTH,
    ),
    Operation(
        "get",
        "/dashboard",
        "dashboard",
        "The routing dashboard (HTML)",
        "On a server with keys: without a session or key it redirects to /dashboard/login; a key without the "
        "stats role sees the login page with a 403.",
        ok_media=(HTML,),
        replies=(
            _redirect(303, "No session or key: to /dashboard/login", keys_only=True),
            Reply(403, "Login page: not a stats or admin key", ((HTML, None),), keys_only=True),
        ),
        security=STATS_AUTH,
    ),
    Operation("get", "/dashboard/login", "dashboardLoginPage", "The dashboard's sign-in page (HTML)", ok_media=(HTML,)),
    Operation(
        "post",
        "/dashboard/login",
        "dashboardLogin",
        "Sign in to the dashboard",
        "Posts an admin or stats key once and gets a session cookie (the key never sits in a URL). A server "
        "without keys has nothing to sign in to and redirects to the dashboard. At most 10 attempts a minute "
        "per client address.",
        request=LoginForm,
        request_media="application/x-www-form-urlencoded",
        request_keys_only=True,
        ok_media=(),
        errors=(400, 408, 413, 429),
        replies=(
            _redirect(303, "Signed in (or no keys): to /dashboard", cookie=True),
            Reply(401, "The login page again: not an admin or stats key", ((HTML, None),), keys_only=True),
            Reply(403, CROSS_ORIGIN, JSON_ERROR),
        ),
    ),
    Operation(
        "post",
        "/dashboard/logout",
        "dashboardLogout",
        "Sign out of the dashboard",
        "Ends the session cookie.",
        ok_media=(),
        replies=(_redirect(303, "Signed out: to /dashboard"), Reply(403, CROSS_ORIGIN, JSON_ERROR)),
    ),
    Operation(
        "post",
        "/mcp",
        "mcpMessage",
        "Send an MCP message",
        MCP_DESCRIPTION,
        request=JsonRpcMessage,
        headers=(Header(SESSION_HEADER, "the session an `initialize` answer opened (absent for `initialize`)"),),
        ok_media=("text/event-stream", "application/json"),
        ok={"type": "string", "description": "a stream of JSON-RPC messages (or one, as application/json)"},
        errors=(408, 413),
        key_errors=KEY_ERRORS,
        replies=(
            Reply(202, "A notification or a response: accepted, no body"),
            Reply(415, "The body is not sent as application/json", MCP_ERROR),
            *MCP_REPLIES,
        ),
        security=KEY_AUTH,
    ),
    Operation(
        "get",
        "/mcp",
        "mcpStream",
        "Listen for server messages",
        "The session's stream of server-sent messages (notifications such as tools/list_changed).",
        headers=(MCP_SESSION,),
        ok_media=("text/event-stream",),
        ok={"type": "string"},
        key_errors=KEY_ERRORS,
        replies=MCP_REPLIES,
        security=KEY_AUTH,
    ),
    Operation(
        "delete",
        "/mcp",
        "mcpEndSession",
        "End an MCP session",
        headers=(MCP_SESSION,),
        ok_media=(),
        key_errors=KEY_ERRORS,
        replies=(Reply(200, "The session ended"), *MCP_REPLIES),
        security=KEY_AUTH,
    ),
    Operation("get", "/openapi.json", "openapi", "This document", ok={"type": "object"}),
    Operation("get", "/docs", "docs", "A readable page over this document (HTML)", ok_media=(HTML,)),
)
