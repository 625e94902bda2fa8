"""The background tune (`tune.on_reload`): when the serving templates leave the tuned encoder at
`embedding.model_path` stale, `tune-encoder` runs again in a child process at low priority, and the server
reloads onto the folder it writes.

A child process, not a thread: training needs JAX and a GiB or so of memory that serving never needs, and
the operating system's priority (`nice`) is what keeps answering ahead of it on the same cores. The folder
is swapped in by a rename (server/tune/folder.py), so the server reads the old folder or the new one, never
half of either; it answers with the old one until the reload. Only a folder `tune-encoder` wrote (one with
a manifest) is ever tuned again: a model folder a user downloaded is never written over.

Workers of one `serve --workers N` share the folder: the first takes `.<folder>.tune.lock` and tunes, the
others wait for the lock, find the folder up to date and only reload. A tune that fails is not retried
for the same templates (the next edit tries again); a newer edit stops an older edit's tune.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..embedding.factory import resolve_path
from ..embedding.tuned_manifest import stale_against, templates_hash
from ..tune_settings import TuneConfig
from .holder import LoadStatus, RuntimeHolder

log = logging.getLogger("intent_router.tune")

TRIGGER = "tune"  # the reload onto a freshly tuned folder
LOCK_POLL_SECONDS = 2.0  # how often a worker waiting on another worker's tune looks again
STOP_SECONDS = 2.0  # the child's grace after SIGTERM before it is killed
MESSAGE_CHARS = 500  # the end of a failed child's stderr kept for /health


@dataclass
class TuneState:
    """What /health shows of the background tune."""

    status: str = "idle"  # idle | waiting (another worker tunes) | running | done | failed
    templates_hash: str | None = None  # the templates being (or last) tuned on
    started_at: float | None = None
    finished_at: float | None = None
    seconds: float | None = None
    steps: int | None = None
    message: str | None = None  # why it failed
    runs: int = 0  # tunes this process started
    pid: int | None = None  # the child's, while it runs

    def dump(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass(frozen=True)
class Target:
    """The tuned folder a config names, and the hash of the templates it should match."""

    folder: Path
    templates_hash: str
    settings: TuneConfig
    config_path: Path


def stale_target(holder: RuntimeHolder) -> Target | None:
    """The tune the serving config needs, or None (background tune off, not a tuned folder, up to date)."""
    config = holder.current.config
    settings = config.app.tune
    embedding = config.app.embedding
    if not settings.on_reload or embedding.model_path is None:
        return None
    folder = resolve_path(embedding.model_path, config.root)
    digest = templates_hash(config.templates)
    if stale_against(folder, digest) is None:
        return None
    return Target(folder, digest, settings, holder.config_path)


def tune_command(target: Target) -> list[str]:
    """`run.py tune-encoder` for the target, at the settings' niceness where `nice` exists."""
    s = target.settings
    command = [sys.executable, "-m", "server.cli", "--config", str(target.config_path), "tune-encoder"]
    command += ["--out", str(target.folder), "--max-seconds", str(s.max_seconds), "--steps", str(s.steps)]
    nice = shutil.which("nice")
    return [nice, "-n", str(s.nice), *command] if nice and s.nice else command


class BackgroundTune:
    """One per serving process: told of every load, it starts, supersedes or leaves a tune."""

    def __init__(self, holder: RuntimeHolder) -> None:
        self.holder = holder
        self.state = TuneState()
        self._task: asyncio.Task | None = None
        self._reload: asyncio.Task | None = None
        self._tuning_for: str | None = None
        self._failed_for: str | None = None
        self._closed = False

    def on_load(self, status: LoadStatus) -> None:
        if status.ok:
            self.consider()

    def consider(self) -> None:
        """Start a tune when the serving config needs one and none is running for these templates; stop one
        the config no longer wants (background tune turned off, or templates changed again)."""
        if self._closed:
            return
        target = stale_target(self.holder)
        running = self._task is not None and not self._task.done()
        if running:
            assert self._task is not None
            off = not self.holder.current.config.app.tune.on_reload
            if not off and (target is None or target.templates_hash == self._tuning_for):
                return  # still wanted (or already up to date: it is reloading onto its folder)
            self._task.cancel()  # turned off, or an older edit's tune: the templates it learns are gone
            log.info("the running encoder tune is stopped: %s", "turned off" if off else "the templates changed")
        if target is None or target.templates_hash == self._failed_for:
            return
        self._tuning_for = target.templates_hash
        self._task = asyncio.get_running_loop().create_task(self._tune(target), name="encoder-tune")

    async def close(self) -> None:
        """Stop a running tune (its child within STOP_SECONDS) and start no other."""
        self._closed = True
        for task in (self._task, self._reload):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _tune(self, target: Target) -> None:
        lock = await self._lock(target)
        try:
            if stale_against(target.folder, target.templates_hash) is not None:
                await self._run_child(target)
            else:  # another worker tuned for these templates while this one waited
                self._finish("done", target, message=None)
        finally:
            lock.close()  # releases the flock
        if self.state.status == "done":  # a task of its own: the reload's listeners may start the next tune
            self._reload = asyncio.get_running_loop().create_task(
                self.holder.reload(trigger=TRIGGER, force=True), name="encoder-tune-reload"
            )

    async def _lock(self, target: Target) -> IO[bytes]:
        """The folder's tune lock (waiting while another worker holds it)."""
        path = target.folder.with_name(f".{target.folder.name}.tune.lock")
        handle = path.open("ab")
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                return handle
            except BlockingIOError:
                self.state = TuneState(status="waiting", templates_hash=target.templates_hash, runs=self.state.runs)
                try:
                    await asyncio.sleep(LOCK_POLL_SECONDS)
                except BaseException:
                    handle.close()
                    raise

    async def _run_child(self, target: Target) -> None:
        started = time.time()
        self.state = TuneState(
            status="running", templates_hash=target.templates_hash, started_at=started, runs=self.state.runs + 1
        )
        log.info("the tuned encoder %s is stale: tuning it again in the background", target.folder)
        process = await asyncio.create_subprocess_exec(
            *tune_command(target),
            cwd=str(Path(__file__).resolve().parents[2]),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.state.pid = process.pid
        try:
            out, err = await process.communicate()
        except asyncio.CancelledError:
            await _stop(process)
            self._finish("idle", target, message="stopped")
            raise
        if process.returncode != 0:
            tail = err.decode("utf-8", "replace").strip()[-MESSAGE_CHARS:]
            last = tail.splitlines()[-1] if tail else ""
            self._failed_for = target.templates_hash
            self._finish("failed", target, message=f"tune-encoder exited with {process.returncode}: {last}")
            log.error("background encoder tune failed (exit %s): %s", process.returncode, tail)
            return
        body = _last_json(out)
        self._finish("done", target, message=None, steps=body.get("steps"))
        log.info("background encoder tune done in %.1f s: reloading onto it", time.time() - started)

    def _finish(self, status: str, target: Target, message: str | None, steps: int | None = None) -> None:
        now = time.time()
        started = self.state.started_at
        self.state = TuneState(
            status=status,
            templates_hash=target.templates_hash,
            started_at=started,
            finished_at=now,
            seconds=round(now - started, 1) if started is not None else None,
            steps=steps,
            message=message,
            runs=self.state.runs,
        )


async def _stop(process: asyncio.subprocess.Process) -> None:
    """SIGTERM, then SIGKILL after STOP_SECONDS."""
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    try:
        await asyncio.wait_for(process.wait(), STOP_SECONDS)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()


def _last_json(out: bytes) -> dict[str, Any]:
    """The child's last stdout line ({} if it is not JSON: the folder is what counts, and it was written)."""
    lines = out.decode("utf-8", "replace").strip().splitlines()
    with contextlib.suppress(ValueError, IndexError):
        body = json.loads(lines[-1])
        if isinstance(body, dict):
            return body
    return {}
