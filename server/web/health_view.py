"""What /health shows to whom. A client key limited to some adapters sees only those (and a composite's
children only when the composite is its own): like everywhere else, it cannot tell an adapter it may not
query from one that does not exist. Config loads are summarised for every key but the admin key: their
errors name files, lines and keys, their changes and warnings name adapters of any scope."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from ..api.responses import ConfigHealth, LoadStatusView, LoadSummaryView
from ..auth import Principal, Role
from ..runtime.holder import LoadStatus

T = TypeVar("T")


def visible_adapters(principal: Principal, adapters: Mapping[str, T]) -> dict[str, T]:
    """The adapters this key may see, in config order."""
    return {name: value for name, value in adapters.items() if principal.may_see(name)}


def load_view(principal: Principal, load: LoadStatus | None) -> LoadStatusView | LoadSummaryView | None:
    if load is None:
        return None
    if principal.role == Role.ADMIN:
        return LoadStatusView.model_validate(load.to_json())
    return LoadSummaryView(
        ok=load.ok,
        at=load.at,
        seconds=round(load.seconds, 4),
        trigger=load.trigger,
        generation=load.generation,
        config_hash=load.config_hash,
        error_count=len(load.errors),
    )


def config_view(
    principal: Principal, last: LoadStatus | None, good: LoadStatus | None, restart_required: list[str]
) -> ConfigHealth:
    return ConfigHealth(
        last_load=load_view(principal, last),
        last_good_load=load_view(principal, good),
        restart_required=restart_required,
    )


def tune_view(principal: Principal, state: dict[str, Any], on: bool) -> dict[str, Any] | None:
    """The background tune, when it is on or has run; why it failed is the admin key's (it names files)."""
    if not on and not state.get("runs"):
        return None
    if principal.role != Role.ADMIN:
        state = {k: v for k, v in state.items() if k != "message"}
    return {"on_reload": on, **state}
