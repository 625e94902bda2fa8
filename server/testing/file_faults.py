"""Faults in files under a running server, for the tests that must survive them: truncation, and files that
refuse writes (immutable for root too, with `chattr +i`; without it, a read-only folder for a non-root user)."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path


def truncate(path: Path) -> None:
    """What `truncate -s 0 path` does: empty the file, creating it when it is not there."""
    with path.open("ab"):
        pass
    os.truncate(path, 0)


def _chattr(flag: str, paths: list[Path]) -> bool:
    if shutil.which("chattr") is None:
        return False
    done = subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True, check=False)
    return done.returncode == 0


def can_freeze() -> bool:
    """Whether `frozen` can make a file refuse writes here (chattr +i works, or we are not root)."""
    if os.geteuid() != 0:
        return True
    probe = Path(os.environ.get("TMPDIR", "/tmp")) / f"freeze-probe-{os.getpid()}"
    probe.touch()
    try:
        return _chattr("+i", [probe]) and _chattr("-i", [probe])
    finally:
        probe.unlink(missing_ok=True)


@contextlib.contextmanager
def frozen(database: Path) -> Iterator[None]:
    """A SQLite file and its folder refuse every write while inside (open descriptors included): the file
    cannot be written, and no journal can be made or removed beside it; writable again on leaving. The
    folder, not a glob of the journal files, is what is frozen: those come and go with every transaction.
    As root, `chattr +i` (needs CAP_LINUX_IMMUTABLE); otherwise both are made read-only."""
    paths = [database, database.parent]
    if os.geteuid() == 0:
        if not _chattr("+i", paths):
            raise RuntimeError("chattr +i failed: check can_freeze() first")
        try:
            yield
        finally:
            _chattr("-i", paths)
        return
    modes = {p: stat.S_IMODE(p.stat().st_mode) for p in paths}
    for p in paths:
        p.chmod(modes[p] & ~0o222)
    try:
        yield
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
