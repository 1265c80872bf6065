"""The node-local cache on a real disk with real locks held by real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from typing import TYPE_CHECKING

import pytest

from prsd.envs.cache import READY, EnvCache
from prsd.envs.lock import FileLock
from prsd.envs.node import prepare
from prsd.envs.settings import EnvSettings
from prsd.envs.spec import EnvError
from tests.helpers import wait_until

if TYPE_CHECKING:
    from pathlib import Path


def _builder(size: int = 10, calls: list[str] | None = None) -> object:
    def build(prefix: Path) -> None:
        prefix.mkdir()
        (prefix / "blob").write_bytes(b"x" * size)
        (prefix / READY).write_text("{}")
        if calls is not None:
            calls.append(prefix.name)

    return build


def _holder(path: Path, *, shared: bool = False) -> subprocess.Popen[str]:
    """A process that takes the lock, says so, and sleeps (a builder or a job using it)."""
    code = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from prsd.envs.lock import FileLock
        FileLock(Path({str(path)!r})).acquire(shared={shared})
        print("held", flush=True)
        time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    said = proc.stdout.readline().strip()
    proc.stdout.close()
    assert said == "held"
    return proc


def test_built_once_published_whole(tmp_path: Path) -> None:
    cache = EnvCache(tmp_path / "c", 10**9, 30)
    calls: list[str] = []
    first = cache.ensure("k1", _builder(calls=calls), lambda: None)  # type: ignore[arg-type]
    first.release()
    again = cache.ensure("k1", _builder(calls=calls), lambda: None)  # type: ignore[arg-type]
    again.release()
    assert (first.built, again.built) == (True, False)
    assert calls == [f".build-k1-{os.getpid()}"]  # built aside, then renamed into place
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == [".locks", "k1"]


def test_failed_build_publishes_nothing(tmp_path: Path) -> None:
    cache = EnvCache(tmp_path / "c", 10**9, 30)

    def broken(prefix: Path) -> None:
        prefix.mkdir()
        (prefix / "half").write_text("half built")
        raise EnvError("error: disk full")

    with pytest.raises(EnvError, match="disk full"):
        cache.ensure("k1", broken, lambda: None)
    assert not cache.ready("k1")
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == [".locks"]


def test_killed_builder_lock_and_half_built_folder_recovered(tmp_path: Path) -> None:
    """kill -9 of the builder frees its lock; its temporary folder is never served."""
    root = tmp_path / "c"
    cache = EnvCache(root, 10**9, 60)
    holder = _holder(root / ".locks" / "k1.build")
    half = root / ".build-k1-99999"
    half.mkdir()
    (half / READY).write_text("{}")  # even a marker inside a temp folder serves nothing
    waited: list[bool] = []
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)
    entry = cache.ensure("k1", _builder(), lambda: waited.append(True))  # type: ignore[arg-type]
    entry.release()
    assert entry.built and not half.exists()


def test_waits_for_a_live_builder(tmp_path: Path) -> None:
    """While another process holds the build lock, the wait is said and then times out."""
    root = tmp_path / "c"
    holder = _holder(root / ".locks" / "k1.build")
    try:
        waited: list[bool] = []
        with pytest.raises(TimeoutError, match="another build of k1"):
            EnvCache(root, 10**9, 0.5).ensure(
                "k1",
                _builder(),  # type: ignore[arg-type]
                lambda: waited.append(True),
            )
        assert waited == [True]
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_lru_eviction_never_removes_one_in_use(tmp_path: Path) -> None:
    root = tmp_path / "c"
    cache = EnvCache(root, 2500, 30)
    for i, key in enumerate(("old", "used", "mid", "new")):
        cache.ensure(key, _builder(size=1000), lambda: None).release()  # type: ignore[arg-type]
        stamp = time.time() - 100 + i
        os.utime(root / key / ".prsd-last-used", (stamp, stamp))
    holder = _holder(root / ".locks" / "used.use", shared=True)  # a job on "used"
    try:
        removed = cache.evict(keep="new")
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert removed == ["old", "mid"]
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == ["new", "used"]


def test_unusable_cache_is_a_clear_error(tmp_path: Path) -> None:
    """A cache folder that cannot be made names itself in one line."""
    (tmp_path / "file").write_text("not a folder")
    settings = EnvSettings.from_env({"PRSD_ENV_CACHE": str(tmp_path / "file" / "envs")})
    log = tmp_path / "logs" / "n1.txt"
    with pytest.raises(EnvError) as info:
        prepare(
            {"requirements": "", "source": "requirements.txt"},
            spool=tmp_path,
            log_path=log,
            settings=settings,
            on_building=lambda _phase: None,
        )
    assert f"the environment cache {tmp_path / 'file' / 'envs'} is not usable" in str(info.value)
    assert "failed: the environment cache" in log.read_text()


def test_lock_file_names_its_holder(tmp_path: Path) -> None:
    lock = FileLock(tmp_path / "k.build")
    assert lock.acquire(wait_s=0)
    assert (tmp_path / "k.build").read_text() == f"{os.getpid()}\n"
    assert not FileLock(tmp_path / "k.build").acquire(wait_s=0)
    lock.release()
    wait_until(lambda: FileLock(tmp_path / "k.build").acquire(wait_s=0), 10, "lock free")
