"""A file written whole: to a temporary name in its directory, then renamed over the target, so a reader
(another process, the next start) never sees half of one. For caches: no fsync (a file cut short by a
crash fails its reader's checks and is rebuilt)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def replace_file(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """`write(file)` fills a temporary file that then replaces `path`. Raises what writing raises (OSError,
    and TypeError / ValueError for a value the writer cannot encode); the target is untouched then."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_json(path: Path, value: Any) -> None:
    """`value` as compact JSON, written whole (`replace_file`)."""
    replace_file(path, lambda fh: fh.write(json.dumps(value, separators=(",", ":")).encode()))
