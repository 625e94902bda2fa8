"""What a reload must satisfy beyond a valid config, because a running server depends on it.

A start refuses a server without keys on a non-loopback address and key variables that are not set; a
reload is held to the same rules (else removing the keys by reload would turn auth off on a public
port, and naming an unset variable would lock the admin out). A start (and `validate`) also refuses a
config without an enabled adapter (`start_issues`). A reload that would take away what
clients are using — every adapter, every adapter a client key may query, the adapter
`server.default_adapter` names — is refused too unless the operator says it is meant
(`POST /admin/reload?allow_removal=true`): deleting an adapters file by mistake must not turn a
serving config into one that answers 404 to everything.
"""

from __future__ import annotations

from ..auth import is_loopback, missing_key_envs
from ..config.errors import ConfigIssue
from .loader import LoadedConfig, resolve_config_path

REMOVAL_HINT = "(POST /admin/reload?allow_removal=true if this is meant)"


def reload_issues(old: LoadedConfig, new: LoadedConfig, listen_host: str, allow_removal: bool) -> list[ConfigIssue]:
    """Why `new` may not replace `old` on a server listening on `listen_host`; empty when it may."""
    issues = auth_issues(new, listen_host)
    if not allow_removal:
        issues += removal_issues(old, new)
    return issues


def auth_issues(new: LoadedConfig, listen_host: str) -> list[ConfigIssue]:
    """The start-time auth rules (server/cli/serve.py), applied to a reloaded config."""
    config_file = _rel(new, new.config_file)
    auth = new.app.auth
    issues: list[ConfigIssue] = []
    if not auth.enabled and not is_loopback(listen_host):
        issues.append(
            ConfigIssue(
                config_file,
                None,
                "auth",
                f"no API keys would be left while the server listens on {listen_host}: keys are required "
                "off loopback (restart on 127.0.0.1 to serve without keys)",
            )
        )
    for name in missing_key_envs(auth):
        issues.append(
            ConfigIssue(config_file, None, "auth", f"API key variable {name} is not set in the server's environment")
        )
    return issues


def start_issues(new: LoadedConfig) -> list[ConfigIssue]:
    """What a first load (`serve`, `validate`) refuses beyond a valid config: no enabled adapter, so that a
    moved folder or an adapters file deleted by mistake is an error, not a server that answers 404 to
    everything. (A reload may still remove every adapter when the operator says it is meant.)"""
    if new.adapters:
        return []
    _, adapters_dir = resolve_config_path(new.config_file)
    return [
        ConfigIssue(
            _rel(new, adapters_dir),
            None,
            "",
            "nothing to serve: no adapter is defined in its *.yaml files, or every one has enabled: false",
        )
    ]


def removal_issues(old: LoadedConfig, new: LoadedConfig) -> list[ConfigIssue]:
    """Removals that would leave running clients without what they use."""
    before = {a.name for a in old.adapters}
    after = {a.name for a in new.adapters}
    _, adapters_dir = resolve_config_path(new.config_file)
    where = _rel(new, adapters_dir)
    config_file = _rel(new, new.config_file)
    issues: list[ConfigIssue] = []
    if before and not after:
        issues.append(
            ConfigIssue(
                where, None, "adapters", f"the reload would leave no adapter (had: {sorted(before)}) {REMOVAL_HINT}"
            )
        )
        return issues
    default = new.app.server.default_adapter
    if default and default not in after:
        issues.append(
            ConfigIssue(
                config_file,
                None,
                "server.default_adapter",
                f"adapter '{default}' would not exist {REMOVAL_HINT}",
            )
        )
    for index, key in enumerate(new.app.auth.client_keys):
        if key.adapters is None:
            continue
        used = [name for name in key.adapters if name in before]
        if used and not any(name in after for name in key.adapters):
            issues.append(
                ConfigIssue(
                    config_file,
                    None,
                    f"auth.client_keys[{index}].adapters",
                    f"client key '{key.name}' would lose every adapter it may query ({', '.join(used)}) {REMOVAL_HINT}",
                )
            )
    return issues


def _rel(config: LoadedConfig, path) -> str:
    try:
        return str(path.relative_to(config.root))
    except ValueError:
        return str(path)
