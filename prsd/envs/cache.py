"""The node-local cache of built environments: one folder per key, never half built.

Invariant: ``<cache>/<key>/`` exists only complete: an entry is built in
``<cache>/.build-<key>-<pid>/`` and published by one rename (prsd.spool.atomic),
so an agent never serves a half-built environment; a temporary folder left by a
killed builder is removed by the next builder of that key (it holds the build lock,
so the dead one cannot be writing). One builder per key at a time (flock, released
by the kernel when a builder dies); everyone else waits and then finds it built.
Each use touches ``.prsd-last-used``; least-recently-used entries beyond the size
budget are removed, never one whose use lock is held.

Errors: OSError (a cache folder that is not writable: the caller names it);
whatever ``build`` raises (the temporary folder is removed, nothing is published).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.envs.lock import FileLock
from prsd.spool.atomic import publish

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

READY = ".prsd-env.json"
LAST_USED = ".prsd-last-used"


@dataclass
class Entry:
    """An environment found or built; hold :attr:`use` while a job runs on it."""

    path: Path
    built: bool
    use: FileLock

    def release(self) -> None:
        self.use.release()


class EnvCache:
    def __init__(self, root: Path, budget_bytes: int, wait_s: float) -> None:
        self.root = root
        self.budget_bytes = budget_bytes
        self.wait_s = wait_s

    def _lock(self, key: str, what: str) -> FileLock:
        return FileLock(self.root / ".locks" / f"{key}.{what}")

    def ready(self, key: str) -> bool:
        return (self.root / key / READY).is_file()

    def ensure(
        self,
        key: str,
        build: Callable[[Path], None],
        on_wait: Callable[[], None],
        *,
        in_place: bool = False,
    ) -> Entry:
        """The entry for ``key``, built by ``build(folder)`` when missing.

        ``build`` writes ``READY`` last. ``in_place`` (conda prefixes, which cannot move):
        the folder is the entry's own, emptied first, and only ``READY`` makes it ready.

        Raises:
            TimeoutError: another builder held the key longer than the wait allowed.
        """
        self.root.mkdir(parents=True, exist_ok=True, mode=0o755)
        use = self._lock(key, "use")
        use.acquire(shared=True)
        try:
            built = False
            if not self.ready(key):
                builder = self._lock(key, "build")
                if not builder.acquire(wait_s=0):
                    on_wait()
                    if not builder.acquire(wait_s=self.wait_s):
                        raise TimeoutError(f"another build of {key} took over {self.wait_s:g} s")
                with builder:
                    if not self.ready(key):
                        self._build(key, build, in_place)
                        built = True
            _touch(self.root / key / LAST_USED)
            return Entry(self.root / key, built, use)
        except BaseException:
            use.release()
            raise

    def _build(self, key: str, build: Callable[[Path], None], in_place: bool) -> None:
        for stale in self.root.glob(f".build-{key}-*"):
            shutil.rmtree(stale, ignore_errors=True)
        if in_place:
            shutil.rmtree(self.root / key, ignore_errors=True)
            try:
                build(self.root / key)
            except BaseException:
                shutil.rmtree(self.root / key, ignore_errors=True)
                raise
            return
        tmp = self.root / f".build-{key}-{os.getpid()}"
        try:
            build(tmp)
            os.chmod(tmp, 0o755)
            publish(tmp, self.root / key, durable=False)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def evict(self, keep: str = "") -> list[str]:
        """Remove least-recently-used entries until the cache fits its budget."""
        entries = [p for p in self.root.iterdir() if (p / READY).is_file() and p.name != keep]
        sizes = {p: folder_size(p) for p in entries}
        total = sum(sizes.values()) + (folder_size(self.root / keep) if keep else 0)
        removed = []
        for path in sorted(entries, key=_last_used):
            if total <= self.budget_bytes:
                break
            use, builder = self._lock(path.name, "use"), self._lock(path.name, "build")
            if not use.acquire(wait_s=0):
                continue  # in use by a job on this node
            try:
                if not builder.acquire(wait_s=0):
                    continue
                with builder:
                    trash = self.root / f".trash-{path.name}-{os.getpid()}"
                    publish(path, trash, durable=False)
                    shutil.rmtree(trash, ignore_errors=True)
                total -= sizes[path]
                removed.append(path.name)
            finally:
                use.release()
        return removed


def folder_size(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                continue
    return total


def _last_used(path: Path) -> float:
    try:
        return (path / LAST_USED).stat().st_mtime
    except OSError:
        return 0.0


def _touch(path: Path) -> None:
    path.touch()
    os.utime(path)
