"""A full or read-only spool is waited out: no crash, no lost row, exact output after.

Real mounts (the tests run as root): the spool lives on a small tmpfs that is filled
to ENOSPC, or remounted read-only, while two jobs run; the space is freed (or the
mount made writable again) and both jobs complete with exact output, every
mini-batch accounted for in processed_mini-batches.csv, with no daemon restarted.
"""

from __future__ import annotations

import csv
import errno
import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from tests.chaos.faultkit import (
    daemon_log,
    expected_lines,
    job_dir,
    make_files_job,
    output_lines,
    wait_final,
)
from tests.fleet import PRSD, Fleet
from tests.helpers import wait_until

PRSCTL = [sys.executable, "-m", "prsd.cli.prsctl"]

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[Path]:
    """A 320 MiB tmpfs (the daemons start on 256 MiB free), unmounted at the end."""
    point = tmp_path / "mnt"
    point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=320m", "tmpfs", str(point)], check=True)
    try:
        yield point
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(point)], check=False)
        subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.fixture
def fleet(tmp_path: Path, mount: Path) -> Iterator[Fleet]:
    f = Fleet(mount / "spool", tmp_path / "daemon-logs")
    yield f
    f.close()


def fill(folder: Path) -> Path:
    """Write a file until the file system says ENOSPC, to its last page; returns it."""
    filler = folder / "filler.bin"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for chunk in (b"\0" * (1 << 20), b"\0" * 4096):
            while True:
                try:
                    os.write(fd, chunk)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
    finally:
        os.close(fd)
    return filler


def succeeded_once(fleet: Fleet, job_id: str, total: int) -> bool:
    path = job_dir(fleet, job_id) / "logs" / "sys" / "job_report" / "processed_mini-batches.csv"
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    ok = sorted(r["mini_batch_id"] for r in rows if r["status"] == "succeeded")
    return ok == [f"{i:09d}" for i in range(total)]


def _some_done(fleet: Fleet, job_id: str) -> bool:
    out = job_dir(fleet, job_id) / "results"
    return out.is_dir() and any(out.rglob("*.res"))


def _start(tmp_path: Path, fleet: Fleet) -> tuple[str, str]:
    fleet.leader()
    fleet.agent("n1", "--slots", "4")
    # Mini-batches of 0.2 s: the agent is still committing tasks when the disk fills (with
    # shorter ones, tasks of 0.5 s could all be done and an idle agent writes nothing).
    first = fleet.submit(make_files_job(tmp_path, "first", 160, per_mb=0.2))
    second = fleet.submit(make_files_job(tmp_path, "second", 60, per_mb=0.2))
    wait_until(lambda: _some_done(fleet, first), 60, "the first results")
    return first, second


def _finish(fleet: Fleet, jobs: dict[str, int]) -> None:
    for job_id, n in jobs.items():
        final = wait_final(fleet, job_id, 120)
        assert final["state"] == "Completed", final
        assert output_lines(fleet, job_id) == expected_lines(n)
        assert succeeded_once(fleet, job_id, n // 2)
    assert fleet.alive("leader") and fleet.alive("n1")
    assert fleet.starts == {"leader": 1, "n1": 1}


@pytest.mark.timeout(300)
def test_full_spool_is_waited_out(tmp_path: Path, fleet: Fleet, mount: Path) -> None:
    """ENOSPC while jobs run: the daemons log it and wait; freed space, exact output."""
    first, second = _start(tmp_path, fleet)
    filler = fill(mount)
    wait_until(
        lambda: "disk is full" in daemon_log(fleet, "leader") + daemon_log(fleet, "n1"),
        60,
        "a daemon to report the full disk",
    )
    assert fleet.alive("leader") and fleet.alive("n1")
    # The node's heartbeat (overwritten in place: no new block) keeps it alive and
    # carries the condition to prsctl nodes and prsctl status.
    wait_until(lambda: "disk is full" in _ctl(fleet, "nodes", "--json"), 120, "nodes to say so")
    assert "disk is full" in _ctl(fleet, "status")
    filler.unlink()
    _finish(fleet, {first: 160, second: 60})
    assert "requeued a lost node" not in daemon_log(fleet, "leader")
    wait_until(
        lambda: "disk is full" not in _ctl(fleet, "nodes", "--json"), 60, "the fault to clear"
    )


def _remount(point: Path, mode: str) -> bool:
    """``mount -o remount,<mode>``; False while files are open for writing (busy)."""
    cmd = ["mount", "-o", f"remount,{mode}", str(point)]
    done = subprocess.run(cmd, capture_output=True, check=False)
    return done.returncode == 0


def _ctl(fleet: Fleet, *args: str) -> str:
    done = subprocess.run(
        [*PRSCTL, *args, "--spool", str(fleet.spool)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def _one_line_error(args: list[str]) -> str:
    """Run a command that must fail with one line and no traceback; returns the line."""
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0, done
    assert "Traceback" not in done.stderr, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.timeout(300)
def test_read_only_spool_is_waited_out(tmp_path: Path, fleet: Fleet, mount: Path) -> None:
    """The spool remounted read-only: the daemons wait, ``prsctl submit`` and ``prsd run``
    say so in one line; remounted read-write, the daemons take the next job at once."""
    fleet.leader()
    fleet.agent("n1", "--slots", "4")
    before = fleet.submit(make_files_job(tmp_path, "before", 20))
    assert wait_final(fleet, before)["state"] == "Completed"
    # Read-only needs no file open for writing: the daemons hold none between jobs.
    wait_until(lambda: _remount(mount, "ro"), 60, "the spool to remount read-only")
    job = make_files_job(tmp_path, "after", 40)
    line = _one_line_error([*PRSCTL, "submit", str(job), "--spool", str(fleet.spool)])
    assert "read-only" in line or "not writable" in line, line
    line = _one_line_error([*PRSD, "run", str(job), "--spool", str(fleet.spool)])
    assert "read-only" in line or "not writable" in line, line
    wait_until(
        lambda: "read-only" in daemon_log(fleet, "leader") + daemon_log(fleet, "n1"),
        60,
        "a daemon to report the read-only spool",
    )
    assert fleet.alive("leader") and fleet.alive("n1")
    assert _remount(mount, "rw")
    after = fleet.submit(job)
    assert wait_final(fleet, after)["state"] == "Completed"
    assert output_lines(fleet, after) == expected_lines(40)
    assert fleet.starts == {"leader": 1, "n1": 1}


def _wait_said(fleet: Fleet, name: str, words: str) -> None:
    wait_until(lambda: words in daemon_log(fleet, name), 60, f"{name} to log {words!r}")


@pytest.mark.timeout(300)
def test_start_on_a_read_only_or_missing_spool_waits(
    tmp_path: Path, fleet: Fleet, mount: Path
) -> None:
    """Daemons (re)started on a read-only spool, and an agent on a spool not there yet,
    wait and say why; ``prsctl status`` and ``nodes`` read the read-only spool; once the
    spool heals the same processes run the next job with exact output."""
    fleet.leader()
    fleet.agent("n1", "--slots", "2")
    before = fleet.submit(make_files_job(tmp_path, "before", 20))
    assert wait_final(fleet, before)["state"] == "Completed"
    fleet.kill("leader")
    fleet.kill("n1")
    wait_until(lambda: _remount(mount, "ro"), 60, "the spool to remount read-only")
    later = tmp_path / "later"  # n2's spool path: its parent appears only later
    fleet.views["n2"] = later / "spool"
    fleet.leader()
    fleet.agent("n1", "--slots", "2")
    fleet.agent("n2", "--slots", "2")
    for name, why in (("leader", "read-only"), ("n1", "read-only"), ("n2", "missing")):
        _wait_said(fleet, name, f"waiting for the spool: {why}")
    assert "Completed" in _ctl(fleet, "status")
    assert "n1" in _ctl(fleet, "nodes")
    assert fleet.alive("leader") and fleet.alive("n1") and fleet.alive("n2")
    assert _remount(mount, "rw")
    later.symlink_to(mount)  # the "mount" of n2 arrives
    job = fleet.submit(make_files_job(tmp_path, "after", 40))
    assert wait_final(fleet, job)["state"] == "Completed"
    assert output_lines(fleet, job) == expected_lines(40)
    assert fleet.starts == {"leader": 2, "n1": 2, "n2": 1}
    assert "the spool is back" in daemon_log(fleet, "n2")
    wait_until(lambda: "n2" in _ctl(fleet, "nodes"), 60, "n2 to serve the spool")


def _zero_byte_ids(fleet: Fleet) -> list[str]:
    ids = fleet.spool / "jobs" / ".ids"
    return [p.name for p in ids.iterdir() if p.stat().st_size == 0] if ids.is_dir() else []


@pytest.mark.timeout(300)
def test_a_folder_copied_in_on_a_full_disk_waits(tmp_path: Path, fleet: Fleet, mount: Path) -> None:
    """On a full disk: a folder copied into inbox/ by hand (its job.yaml left empty) waits
    instead of failing, and a ready folder leaves no empty id reservation per retry;
    with space again, both jobs run with exact output."""
    fleet.leader()
    fleet.agent("n1", "--slots", "2")
    assert wait_final(fleet, fleet.submit(make_files_job(tmp_path, "warm", 4)))["state"]
    ready = make_files_job(tmp_path, "ready", 20)
    hidden = fleet.spool / "inbox" / ".ready"
    subprocess.run(["cp", "-r", str(ready), str(hidden)], check=True)
    filler = fill(mount)
    hidden.rename(fleet.spool / "inbox" / "ready")  # appears whole while the disk is full
    copied = make_files_job(tmp_path, "copied", 20)
    done = subprocess.run(
        ["cp", "-r", str(copied), str(fleet.spool / "inbox" / "copied")], check=False
    )
    assert done.returncode != 0  # cp met the full disk
    assert (fleet.spool / "inbox" / "copied" / "job.yaml").stat().st_size == 0
    _wait_said(fleet, "leader", "its job file is empty")
    _wait_said(fleet, "leader", "disk is full")
    # A retry in flight holds its empty marker between the create and its undoing (a
    # moment, longer on a loaded machine); none may stay.
    wait_until(lambda: _zero_byte_ids(fleet) == [], 10, "no empty id reservation left")
    assert (fleet.spool / "inbox" / "copied").is_dir()  # waiting, not failed
    filler.unlink()
    inbox_copy = fleet.spool / "inbox" / "copied"
    for part in ("code", "data"):  # the user copies it again, job.yaml last
        subprocess.run(["cp", "-r", f"{copied / part}/.", str(inbox_copy / part)], check=True)
    subprocess.run(["cp", str(copied / "job.yaml"), str(inbox_copy / "job.yaml")], check=True)
    for name in ("ready", "copied"):
        job_id = _wait_job_of(fleet, name)
        final = wait_final(fleet, job_id, 120)
        assert final["state"] == "Completed", final
        assert output_lines(fleet, job_id) == expected_lines(20)
    assert _zero_byte_ids(fleet) == []


def _wait_job_of(fleet: Fleet, name: str) -> str:
    wait_until(lambda: _job_of(fleet, name) != "", 60, f"{name} to be taken in")
    return _job_of(fleet, name)


def _job_of(fleet: Fleet, name: str) -> str:
    """The id the leader gave the inbox folder ``name`` ("" before it is taken in)."""
    found = [n for n in os.listdir(fleet.spool / "jobs") if n.startswith(f"{name}-")]
    return found[0] if found else ""
