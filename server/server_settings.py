"""The `server:` block of config.yaml: where `serve` listens, how long a request and its parts may take.

It sits beside web/, not in it: the config model (runtime/settings.py) composes it, and web/ builds on
the runtime, so the block lives below both.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


def host_name(host: str) -> str:
    """The name in a `Host` value (or a server.allowed_hosts entry): no port, no IPv6 brackets, lower-cased."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class ServerSettings(BaseModel):
    """The `server:` block: where `serve` listens and how long a request may take. The three read timeouts
    (header, body, keep-alive) apply to `serve`, take effect on reload for new connections, and bound slow
    clients (slowloris)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field(
        "127.0.0.1", description="address `serve` listens on; without auth keys only a loopback address is allowed"
    )
    port: int = Field(8080, ge=0, le=65535, description="port `serve` listens on (0: any free port)")
    request_timeout: float = Field(
        30.0,
        gt=0,
        description="seconds a question may take in all (routing, parameters, the query and its retries) before it is"
        " answered with a timeout error",
    )
    # slow clients (server/web/slow_clients.py): a request's headers, then its body, must arrive within these
    header_timeout: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="seconds for a request's headers to arrive, counted from the connection's opening or the first "
        "byte of its next request; past it the connection is closed (slow clients)",
    )
    body_timeout: float = Field(
        30.0,
        gt=0,
        le=3600,
        description="seconds for a request body to arrive in full, counted before request_timeout starts; past it: "
        "408 body_timeout and the connection is closed",
    )
    keepalive_timeout: float = Field(
        75.0, gt=0, le=3600, description="seconds an idle keep-alive connection stays open"
    )
    max_question_chars: int = Field(
        2000, ge=1, description="longest question accepted, as asked and once normalised (400 beyond)"
    )
    # one-thread forward passes of the local encoder run side by side under concurrency (embedding/lanes.py);
    # unset: one per core this worker gets (lanes.resolve_lanes), 0: every question on the multi-threaded session
    encoder_lanes: int | None = Field(
        None,
        ge=0,
        le=64,
        description="one-thread forward passes of the local encoder that run concurrent questions side by side; "
        "unset: one per core of this process's share, at most 4; 0: off. Applied at start and at every "
        "reload",
    )
    # a lane pass beside another carries at least this many questions (embedding/batching.py); measured in
    # docs/benchmarks.md: 4 gained 6-11% at 1,000 templates under 4-8 clients, lost 10-31% on small trees under 4
    encoder_lane_min_questions: int = Field(
        1,
        ge=1,
        le=16,  # the largest pass the encoder runs for questions (embedding/minilm.py QUERY_BATCH)
        description="fewest waiting questions an idle encoder lane starts a pass with while another pass runs "
        "(fewer wait for a pass to finish, then go in one); 1: at once. Worth raising (e.g. 4) where routing "
        "after the encoder is heavy (hundreds of templates with the intent model) and several questions "
        "arrive at once: fewer, larger passes leave a core to the routing. At most 16, the largest pass. Applied "
        "at start and at every reload",
    )
    # DNS-rebinding protection of a loopback server (web/host_guard.py): names it answers to beside loopback's own
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="host names a server listening on loopback also answers to, e.g. the public name a reverse "
        "proxy on this machine passes on in `Host`; on loopback every other `Host`, and every browser `Origin` "
        "naming another host, is refused (DNS-rebinding protection). Off loopback nothing is checked",
    )

    @field_validator("allowed_hosts")
    @classmethod
    def _host_names(cls, value: list[str]) -> list[str]:
        """Names as a `Host` header reads once its port and an IPv6 literal's brackets are off, lower-cased."""
        names = []
        for entry in value:
            name = host_name(entry)
            if not name or any(c in entry.strip() for c in "*?/ "):
                raise ValueError(f"{entry!r} is not a host name (no wildcards, schemes or paths)")
            names.append(name)
        return names

    # used when a request names no adapter; unset: the first composite, else the first adapter
    default_adapter: str | None = Field(
        None,
        description="the adapter a request without `adapter` asks; unset: the first composite, else the first adapter",
    )
