"""Whether a database file is still the one an open connection reads.

An open SQLite or DuckDB handle keeps reading a file that was deleted or replaced (the old inode), so
`SELECT 1` on the pool stays fine while every answer is stale. Health and execution compare the path's
current identity (device and inode) with the one taken when the database was opened.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..api.health import Health


@dataclass(frozen=True)
class FileIdentity:
    path: Path
    device: int
    inode: int

    @classmethod
    def of(cls, path: Path) -> FileIdentity | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        return cls(path, st.st_dev, st.st_ino)

    @classmethod
    def unknown(cls, path: Path) -> FileIdentity:
        """An identity no file has: a connection that had to be dropped (or could not be opened again)
        then finds its file "replaced" on its next query and opens it, whichever file is there by then."""
        return cls(path, -1, -1)

    def problem(self) -> str | None:
        """None while the path still names the opened file; else "missing" or "replaced"."""
        now = FileIdentity.of(self.path)
        if now is None:
            return "missing"
        if (now.device, now.inode) != (self.device, self.inode):
            return "replaced"
        return None


REASONS = {
    "missing": "database file is missing",
    "replaced": "database file was replaced under the open connection",
}


class FollowsFile(ABC):
    """A data adapter reading one database file (SQLite, DuckDB), put before DataAdapter in its bases: the
    one rule for a file that changed under the open connection, in health and before every query."""

    _file: FileIdentity | None  # None: no file (a server database, or in memory)

    @abstractmethod
    async def _follow_file(self, problem: str) -> None:
        """Missing: raise SourceUnavailable. Replaced: open the file that is there now."""

    def file_down(self) -> dict[str, Any] | None:
        """The health answer while the file is missing or replaced (None: it is the one opened)."""
        problem = self._file.problem() if self._file is not None else None
        return {"status": Health.DOWN, "reason": REASONS[problem]} if problem else None

    async def check_source(self) -> None:
        if self._file is not None and (problem := self._file.problem()):
            await self._follow_file(problem)
