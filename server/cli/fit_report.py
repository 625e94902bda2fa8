"""What `fit-thresholds` says beyond the numbers: the questions the chosen rule gets wrong and, for each,
what to change where (a template's examples at its file:line, or the threshold in the adapter's entry);
and, with `--write`, the fitted values written into that entry (server/config/yaml_edit.py).

A fit that prints 0.108 and nothing else leaves the operator guessing why accuracy is 96% and which
four questions are the 4%; the list answers that, in the same words the routing log uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..config.yaml_edit import EditRefused, set_keys
from ..routing.decision import DecisionRule
from ..routing.fitting import (
    AMBIGUOUS,
    ANSWERED_OUT_OF_SCOPE,
    BELOW_THRESHOLD,
    WRONG_TEMPLATE,
    Fit,
    Observation,
    misses,
)
from ..routing.routable import Routable
from ..runtime.loader import AdapterEntry
from ..templates import Template

Key = tuple[str, str]


def _name(key: Key | None) -> str | None:
    return f"{key[0]}/{key[1]}" if key else None


def _where(template: Template | None) -> str:
    if template is None:
        return "?"
    return f"{template.source_file}:{template.source_line}" if template.source_line else template.source_file


def _advice(why: str, o: Observation, rule: DecisionRule, templates: dict[Key, Template], knob: str) -> str:
    expected, routed = o.expected, o.predicted
    exp_t, got_t = templates.get(expected) if expected else None, templates.get(routed) if routed else None
    if why == WRONG_TEMPLATE:
        return (
            f"add questions like this one to the nl_examples of {_name(expected)} ({_where(exp_t)}), or make "
            f"the description and examples of {_name(routed)} more specific ({_where(got_t)})"
        )
    if why == BELOW_THRESHOLD and routed == expected:
        return (
            f"the right template scored {o.score:.3f}, under {knob} {rule.confidence_threshold:g}: add questions "
            f"like this one to the nl_examples of {_name(expected)} ({_where(exp_t)})"
        )
    if why == BELOW_THRESHOLD:
        return (
            f"add questions like this one to the nl_examples of {_name(expected)} ({_where(exp_t)}); its best "
            f"candidate was {_name(routed)} at {o.score:.3f}"
        )
    if why == AMBIGUOUS:
        return (
            f"the runner-up scored within ambiguity_margin {rule.ambiguity_margin:g} of {_name(routed)}: make the "
            f"two templates' examples more distinct ({_where(got_t)}), or lower ambiguity_margin"
        )
    assert why == ANSWERED_OUT_OF_SCOPE
    return (
        f"no template should answer it, but {_name(routed)} scored {o.score:.3f} (at or above {knob} "
        f"{rule.confidence_threshold:g}): raise {knob} above {o.score:.3f} if such questions matter more than "
        f"the in-scope ones it would then turn away, or take out what {_name(routed)}'s examples share with it "
        f"({_where(got_t)})"
    )


def wrong_answers(
    adapter: Routable,
    items: Sequence[dict[str, Any]],
    obs: Sequence[Observation],
    rule: DecisionRule,
    knob: str = "confidence_threshold",
) -> list[dict[str, Any]]:
    """The questions `rule` gets wrong: question, expected, routed, score, why, and what to change where.
    `knob` names the setting the rule's threshold is (confidence_threshold, or acceptance.threshold)."""
    templates = {(s.name, t.id): t for s in adapter.routing_sources() for t in s.templates.values()}
    out = []
    for i, why in misses(obs, rule):
        o = obs[i]
        out.append(
            {
                "question": items[i]["question"],
                "expected": _name(o.expected),
                "routed": _name(o.predicted),
                "score": round(o.score, 4),
                "runner_up": None if o.runner_up is None else round(o.runner_up, 4),
                "why": why,
                "change": _advice(why, o, rule, templates, knob),
            }
        )
    return out


def threshold_change(entry: AdapterEntry, current: dict[str, Any], fitted: dict[str, float]) -> list[str]:
    """What to set where for the fitted values to apply ("unchanged" when they already do)."""
    lines = []
    for key, value in fitted.items():
        line = entry.line_of(key)
        where = f"{entry.display}:{line}" if line else entry.display
        if current.get(key) == value:
            lines.append(f"{key}: {value:g} is already set ({where})")
        else:
            lines.append(
                f"set {key}: {value:g} (now {current.get(key)}) in {where}, or run again with --write to write it there"
            )
    return lines


def write_fitted(entry: AdapterEntry, fitted: dict[str, float]) -> dict[str, Any]:
    """Write the values into the adapter's entry (comments and layout kept, a .bak next to it); a running
    server reloads the file as it does any edit."""
    try:
        written = set_keys(entry.file, entry.display, entry.key_path, fitted)
    except EditRefused as exc:
        return {"written": False, "file": entry.display, "reason": str(exc)}
    return {
        "written": True,
        "file": entry.display,
        "backup": f"{entry.display}.bak",
        "values": {key: {"value": value, "line": written.lines.get(key)} for key, value in fitted.items()},
    }


def chosen_fit(best: Fit, with_margin: Fit) -> Fit:
    """The fit to apply: with a margin only when the margin is worth something (strictly more accurate)."""
    return with_margin if with_margin.accuracy > best.accuracy else best


def fitted_values(fit: Fit, threshold: float) -> dict[str, float]:
    values = {"confidence_threshold": threshold}
    if fit.margin is not None:
        values["ambiguity_margin"] = fit.margin
    return values
