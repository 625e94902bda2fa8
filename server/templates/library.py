"""Load an adapter's template libraries from globs, with file:line errors and cross-checks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..config.errors import ConfigError, ConfigIssue
from ..config.parsed_body import BodyParser, ParsedBody
from ..config.validation import issues_from_validation
from ..config.yaml_source import YamlDocument, load_yaml
from .models import ParameterSpec, Template

if TYPE_CHECKING:
    from ..config.parse_cache import ParseCache


# why a marked example value cannot fill its parameter, or None (server/params/spans.py check_annotation)
ValueCheck = Callable[[ParameterSpec, str], str | None]
# why an example's stated value ({text, values} entries) does not fit its parameter, or None
StatedCheck = Callable[[ParameterSpec, Any], str | None]


@dataclass(frozen=True)
class ValueChecks:
    """What loading asks of the parameter readers (server/params/load_checks.py), which templates/ cannot
    import: why a marked example value cannot fill its parameter, and why a parameter's default does not fit
    it (its type, allowed_values, min/max, pattern); None when it can."""

    mark: ValueCheck
    default: Callable[[ParameterSpec], str | None]
    value: StatedCheck


Where = tuple[str, int | None, str]  # (file, line, key) of an adapter's `templates:` entry
_WILDCARDS = frozenset("*?[")


@dataclass
class LibraryLoad:
    templates: list[Template]
    files: list[Path]


def glob_base(pattern: str, root: Path) -> tuple[Path, str]:
    """Split a glob into the deepest directory without a wildcard and the rest of the pattern.

    pathlib refuses absolute patterns in `glob`, so an absolute glob is matched from its static
    directory; a relative one from that directory under `root`. The rest is "" for a plain path."""
    parts = Path(pattern).parts
    static: list[str] = []
    for part in parts:
        if any(c in part for c in _WILDCARDS):
            break
        static.append(part)
    rest = str(Path(*parts[len(static) :])) if len(static) < len(parts) else ""
    base = Path(*static) if static else Path(".")
    return (base if base.is_absolute() else root / base), rest


def expand_globs(patterns: list[str], root: Path) -> list[Path]:
    """The files the patterns match, in pattern order then name order (absolute or relative to root)."""
    files: list[Path] = []
    for pattern in patterns:
        base, rest = glob_base(pattern, root)
        matches = sorted(base.glob(rest)) if rest else [base]
        for match in matches:
            # a link to nothing is listed too: loading it then fails with an error naming the file,
            # instead of its templates going missing without a word
            dangling = match.is_symlink() and not match.exists()
            if (match.is_file() or dangling) and match not in files:
                files.append(match)
    return files


def parse_values_query(parse_body: BodyParser, raw: Any) -> ParsedBody:
    """A `values_from` query goes through the adapter's own body guard (read-only, one statement, ...)
    and must take no parameters; used at load and again when the list is fetched."""
    parsed = parse_body(raw)
    if parsed.placeholders:
        raise ValueError(f"a values_from query takes no parameters (found {sorted(parsed.placeholders)})")
    return parsed


def load_library(
    patterns: list[str],
    root: Path,
    body_key: str,
    parse_body: BodyParser,
    adapter: str,
    templates_at: Where | None = None,
    checks: ValueChecks | None = None,
    cache: ParseCache | None = None,
) -> LibraryLoad:
    """Every template of one adapter; raises ConfigError listing all problems found.

    `templates_at` is where the adapter's `templates:` key is written, for errors about the globs;
    `checks` reads each annotated example value and each default as its parameter's type; `cache` keeps parsed files
    (config/parse_cache.py: the caller wraps `parse_body` with the same cache)."""
    issues: list[ConfigIssue] = []
    templates: list[Template] = []
    files = expand_globs(patterns, root)
    if patterns and not files:
        file, line, key = templates_at or (adapter, None, "templates")
        issues.append(ConfigIssue(file, line, key, f"no template file matches {patterns}"))
    seen: dict[str, str] = {}
    for path in files:
        display = _display(path, root)
        try:
            doc = load_yaml(path, display, cache=cache)
        except ConfigError as exc:
            issues.extend(exc.issues)
            continue
        for template, problems in _templates_in(doc, body_key, parse_body, checks):
            issues.extend(problems)
            if template is None:
                continue
            if template.id in seen:
                issues.append(
                    ConfigIssue(
                        display,
                        template.source_line,
                        f"templates[id={template.id}]",
                        f"duplicate template id in adapter '{adapter}' (first defined in {seen[template.id]})",
                    )
                )
                continue
            seen[template.id] = f"{display}:{template.source_line}"
            templates.append(template)
    if issues:
        raise ConfigError(issues)
    return LibraryLoad(templates=templates, files=files)


def count_pair_issues(templates: list[Template]) -> list[ConfigIssue]:
    """`counts:` names a list template of the same adapter, other than itself, that is not a count template
    itself and that no other template already counts (a count question must have one answer). Checked on
    all of an adapter's templates together (the loader and the incremental loader), since the pair may
    live in two files."""
    by_id = {t.id: t for t in templates}
    counted: dict[str, str] = {}
    issues = []
    for t in templates:
        if t.counts is None:
            continue
        target = by_id.get(t.counts)
        problem = None
        if target is None:
            problem = f"no template '{t.counts}' in this adapter to count"
        elif target is t:
            problem = "a template cannot count itself"
        elif target.counts is not None:
            problem = f"'{t.counts}' is a count template itself (it counts '{target.counts}')"
        elif t.counts in counted:
            problem = f"'{t.counts}' is already counted by '{counted[t.counts]}'"
        else:
            counted[t.counts] = t.id
        if problem is not None:
            issues.append(
                ConfigIssue(t.source_file or "templates", t.source_line, f"templates[id={t.id}].counts", problem)
            )
    return issues


def _display(path: Path, root: Path) -> str:
    """The file as the operator wrote it, relative to the root: a link by its own name, not its target's."""
    for file, base in ((path.absolute(), root.absolute()), (path.resolve(), root.resolve())):
        try:
            return str(file.relative_to(base))
        except ValueError:
            continue
    return str(path)


def _templates_in(doc: YamlDocument, body_key: str, parse_body: BodyParser, checks: ValueChecks | None):
    data = doc.data
    if not isinstance(data, dict) or set(data) != {"templates"} or not isinstance(data["templates"], list):
        keys = sorted(data) if isinstance(data, dict) else []
        extra = [k for k in keys if k != "templates"]
        message = (
            f"unknown top-level keys {extra}; a library file holds only 'templates:'"
            if extra
            else "a template library needs a 'templates:' list"
        )
        yield None, [doc.issue((extra[0],) if extra else (), message)]
        return
    for index, raw in enumerate(data["templates"]):
        path = ("templates", index)
        if not isinstance(raw, dict):
            yield None, [doc.issue(path, "each template must be a mapping")]
            continue
        yield _one_template(doc, path, dict(raw), body_key, parse_body, checks)


def _one_template(
    doc: YamlDocument, path, raw: dict, body_key: str, parse_body: BodyParser, checks: ValueChecks | None
):
    if body_key not in raw:
        return None, [doc.issue(path, f"template has no '{body_key}' query body")]
    raw_body = raw.pop(body_key)
    line = doc.line_of(path)
    try:
        template = Template.model_validate(
            {
                **raw,
                "body_key": body_key,
                "body": raw_body,
                "source_file": doc.file,
                "source_line": line,
                "body_line": doc.line_of((*path, body_key)),
            }
        )
    except ValidationError as exc:
        return None, issues_from_validation(exc, doc, path)
    try:
        parsed = parse_body(raw_body)
    except ValueError as exc:
        return None, [doc.issue((*path, body_key), str(exc))]
    declared = {p.name for p in template.parameters}
    problems = []
    undeclared = sorted(parsed.placeholders - declared)
    if undeclared:
        problems.append(doc.issue((*path, body_key), f"placeholders not declared as parameters: {undeclared}"))
    unused = sorted(declared - parsed.placeholders)
    if unused:
        problems.append(doc.issue((*path, "parameters"), f"parameters not used in the {body_key} body: {unused}"))
    for index, spec in enumerate(template.parameters):
        if spec.values_from is not None:
            try:
                parse_values_query(parse_body, spec.values_from.query)
            except ValueError as exc:
                problems.append(doc.issue((*path, "parameters", index, "values_from", "query"), str(exc)))
    problems += _annotation_problems(doc, path, template, checks.mark if checks is not None else None)
    problems += _example_value_problems(doc, path, template, checks.value if checks is not None else None)
    if checks is not None:
        for index, spec in enumerate(template.parameters):
            reason = checks.default(spec) if spec.default is not None else None
            if reason is not None:
                problems.append(doc.issue((*path, "parameters", index, "default"), reason))
    if problems:
        return None, problems
    return template.model_copy(update={"body": parsed.value}), []


def _unknown(template: Template, name: str) -> str:
    """What is said of a name that is none of the template's parameters (a mark's, a stated value's)."""
    known = ", ".join(p.name for p in template.parameters) or "none"
    return f"no parameter '{name}' (known: {known})"


def _example_value_problems(doc: YamlDocument, path, template: Template, check: StatedCheck | None):
    """An example's stated values name a parameter of the template and fit it, at the example's line."""
    problems = []
    for index, pairs in enumerate(template.example_values):
        for name, value in pairs:
            where = (*path, "nl_examples", index, "values", name)
            spec = template.parameter(name)
            if spec is None:
                problems.append(doc.issue(where, _unknown(template, name)))
                continue
            reason = check(spec, value) if check is not None else None
            if reason is not None:
                problems.append(doc.issue(where, f"{value!r} does not fit '{name}': {reason}"))
    return problems


def _annotation_problems(doc: YamlDocument, path, template: Template, value_check: ValueCheck | None):
    """Marked example values name a parameter of the template and read as its type, at the example's line."""
    problems = []
    for index, spans in enumerate(template.example_spans):
        text = template.nl_examples[index]
        for span in spans:
            where = (*path, "nl_examples", index)
            value = text[span.start : span.end]
            spec = template.parameter(span.parameter)
            if spec is None:
                problems.append(doc.issue(where, f"[{value}]({span.parameter}): {_unknown(template, span.parameter)}"))
                continue
            reason = value_check(spec, value) if value_check is not None else None
            if reason is not None:
                problems.append(doc.issue(where, f"[{value}]({span.parameter}): {reason}"))
    return problems
