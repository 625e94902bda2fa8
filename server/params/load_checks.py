"""What the template loader asks of the parameter readers (templates/library.py `ValueChecks`): a marked
example value must read as its parameter's type, and a default must fit its own parameter. A default that
does not ('Legal' outside allowed_values, 'abc' for an integer, 5000 above max 500) would otherwise load and
then ask every user who left the value out about a value they never gave; and an example's stated value
must fit its parameter as well."""

from __future__ import annotations

from ..templates import ParameterSpec
from ..templates.library import ValueChecks
from .coercion import InvalidValue, canonical_allowed, coerce
from .spans import check_annotation


def check_value(spec: ParameterSpec, value: object) -> str | None:
    """Why a value (an example's stated value, a default) does not fit its parameter (its type, allowed_values,
    min/max, pattern), or None."""
    try:
        coerce(spec, canonical_allowed(spec, value))
    except InvalidValue as exc:
        return str(exc)
    return None


def check_default(spec: ParameterSpec) -> str | None:
    """Why the parameter's default does not fit it, or None."""
    reason = check_value(spec, spec.default)
    return None if reason is None else f"the default {spec.default!r} does not fit the parameter: {reason}"


LOAD_CHECKS = ValueChecks(mark=check_annotation, default=check_default, value=check_value)
