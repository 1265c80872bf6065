"""``prsd doctor`` and the daemons' start-up check: a local spool passes, a blob-style FUSE mount fails."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from prsd.doctor.race import judge_race
from prsd.errors import ExitCode
from prsd.spool.fstype import Level, spool_mount
from tests.helpers import wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

PRSD = [sys.executable, "-m", "prsd.daemon"]


def _prsd(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PRSD, *args], capture_output=True, text=True, timeout=timeout_s, check=False
    )


def test_local_spool_passes_every_check(tmp_path: Path) -> None:
    """On a local folder every check passes, the race included, and nothing is left behind."""
    r = _prsd("doctor", "--spool", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].endswith(": OK")
    checks = {line.split()[1].rstrip(":"): line.split()[0] for line in lines[1:]}
    for name in (
        "mount-type",
        "permissions",
        "free-space",
        "o-excl",
        "rename",
        "clock-skew",
        "rename-race",
    ):
        assert checks.get(name) == "ok", r.stdout
    assert os.listdir(tmp_path / ".doctor") == []


def test_world_writable_job_folders_warn(tmp_path: Path) -> None:
    """Anyone could forge tasks in a world-writable jobs/: a warning naming the fix."""
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs").chmod(0o777)
    r = _prsd("doctor", "--spool", str(tmp_path))
    assert r.returncode == 0
    assert "warn  permissions: jobs/ is writable by everyone (chmod o-w)" in r.stdout


def test_peer_mount_of_the_same_folder(tmp_path: Path) -> None:
    """--peer-mount through a bind mount: the race runs over both paths, listings are fresh."""
    peer = tmp_path / "peer"
    spool = tmp_path / "spool"
    spool.mkdir()
    peer.mkdir()
    subprocess.run(["mount", "--bind", str(spool), str(peer)], check=True)
    try:
        r = _prsd("doctor", "--spool", str(spool), "--peer-mount", str(peer))
    finally:
        subprocess.run(["umount", str(peer)], check=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(two mounts)" in r.stdout
    assert "ok    listing-freshness: seen through the peer mount after" in r.stdout


@pytest.mark.parametrize(
    ("a", "b", "created_b", "left", "problem"),
    [
        (["t00000", "t00001"], ["t00002"], [], set(), ""),
        (
            ["t00000", "t00001"],
            ["t00001", "t00002"],
            [],
            set(),
            "1 of 3 tasks were claimed by both",
        ),
        (["t00000"], [], [], {"t00001"}, "1 tasks were lost"),
        (
            ["t00000", "t00001", "t00002"],
            [],
            ["x00001"],
            set(),
            "1 of 3 O_EXCL creates succeeded twice",
        ),
    ],
)
def test_judge_race(
    a: list[str], b: list[str], created_b: list[str], left: set[str], problem: str
) -> None:
    """Double claims, lost tasks and double exclusive creates each fail the race."""
    results = {
        "renamed_a": a,
        "renamed_b": b,
        "created_a": ["x00000", "x00001", "x00002"],
        "created_b": created_b,
    }
    level, detail = judge_race(results, 3, left)
    if problem:
        assert level is Level.FAIL and problem in detail
    else:
        assert level is Level.OK, detail


@pytest.fixture
def rclone_mounts(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """Two rclone FUSE mounts of one local folder: two clients of a copy-and-delete file system."""
    rclone = shutil.which("rclone")
    assert rclone, "rclone is missing: .ci/run installs it (apt-get install rclone fuse3)"
    backing = tmp_path / "backing"
    backing.mkdir()
    conf = tmp_path / "rclone.conf"
    conf.write_text("[loc]\ntype = local\n", encoding="utf-8")
    mounts = (tmp_path / "m0", tmp_path / "m1")
    started = []
    try:
        for i, m in enumerate(mounts):
            m.mkdir()
            subprocess.run(
                [rclone, "mount", f"loc:{backing}", str(m), "--config", str(conf),
                 "--vfs-cache-mode", "writes", "--cache-dir", str(tmp_path / f"cache{i}"),
                 "--daemon", "--log-file", str(tmp_path / f"rclone{i}.log")],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                check=True, timeout=60,
            )  # fmt: skip
            started.append(m)
            wait_until(lambda m=m: _fstype(m) == "fuse.rclone", 30, f"rclone mount at {m}")  # type: ignore[misc]
        yield mounts
    finally:
        for m in started:
            subprocess.run(["fusermount3", "-u", "-z", str(m)], check=False, timeout=60)


def _fstype(path: Path) -> str:
    mount = spool_mount(str(path))
    return mount.fstype if mount else ""


def test_daemons_refuse_a_blob_style_mount(rclone_mounts: tuple[Path, Path]) -> None:
    """Leader and agent exit 3 at start-up, naming the mount type and why it is unsafe."""
    spool = rclone_mounts[0] / "spool"
    for role in (["leader"], ["agent", "--node-id", "n1"]):
        r = _prsd(*role, "--spool", str(spool))
        assert r.returncode == ExitCode.SPOOL_REFUSED, r.stderr
        assert "refused" in r.stderr and "fuse.rclone" in r.stderr
        assert "copy-and-delete" in r.stderr


def test_doctor_shows_the_race_through_two_mounts(rclone_mounts: tuple[Path, Path]) -> None:
    """Even with --unsafe-spool the two-mount race fails: O_EXCL is not exclusive there."""
    m0, m1 = rclone_mounts
    r = _prsd(
        "doctor", "--spool", str(m0), "--peer-mount", str(m1), "--unsafe-spool",
        "--listing-timeout", "1",
    )  # fmt: skip
    assert r.returncode == ExitCode.SPOOL_REFUSED, r.stdout + r.stderr
    assert "warn  mount-type:" in r.stdout and "accepted by --unsafe-spool" in r.stdout
    race = next(line for line in r.stdout.splitlines() if "rename-race" in line)
    assert race.startswith("fail") and "O_EXCL creates succeeded twice" in race, r.stdout
