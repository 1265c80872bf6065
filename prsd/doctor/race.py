"""The doctor's concurrent checks: two real processes race for one pool of tasks.

One process claims through the spool's path, the other through ``--peer-mount`` when
given (a second mount of the same share: a second client with its own caches, as a
second machine would be), else through the same path. Each renames every task of a
shared pool into its own folder and creates every name of a shared set with
``O_EXCL``. On a file system with atomic, exclusive rename every task ends up claimed
once and every name created once. A blob mount shows double claims here when the two
sides are two mounts; one mount alone is serialised by the kernel and looks fine,
which is why the mount type is checked as well.

Listing freshness (``--peer-mount`` only): how long a file created through one mount
takes to appear in, and disappear from, a listing through the other. That delay is
the extra latency of every claim and heartbeat; it never affects correctness.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from prsd.spool.fstype import Level
from prsd.spool.jsonobject import decode_object
from prsd.spool.listing import names

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.doctor.findings import Report

RACE_TASKS = 1000
RACE_TIMEOUT_S = 120.0
FRESH_WARN_S = 5.0


def _start(base: Path, role: str, count: int) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "prsd.doctor.racer", str(base), role, str(count)]
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        proc.kill()
        proc.wait()
        raise OSError(f"the race process for {base} did not start")
    return proc


def _prepare(base: Path, count: int) -> None:
    for d in ("pool", "a", "b", "excl"):
        (base / d).mkdir()
    for i in range(count):
        (base / "pool" / f"t{i:05d}").write_bytes(b"task\n")


def run_race(
    base: Path, peer_base: Path | None, *, count: int = RACE_TASKS
) -> dict[str, list[str]]:
    """Race two processes over a pool in ``base``; the names each believes it won.

    Returns a dict with ``renamed_a``, ``renamed_b``, ``created_a``, ``created_b``.

    Raises:
        OSError: a racer could not start or did not finish within RACE_TIMEOUT_S.
    """
    _prepare(base, count)
    procs = [_start(base, "a", count), _start(peer_base or base, "b", count)]
    results: dict[str, list[str]] = {}
    try:
        start_at = time.time() + 0.3
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write(f"go {start_at}\n")
            proc.stdin.flush()
        for role, proc in zip("ab", procs, strict=True):
            out, _ = proc.communicate(timeout=RACE_TIMEOUT_S)
            won = decode_object(out.strip().splitlines()[-1])
            results[f"renamed_{role}"] = won["renamed"]
            results[f"created_{role}"] = won["created"]
    except (subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        raise OSError(f"the race did not finish: {exc}") from exc
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    return results


def judge_race(results: dict[str, list[str]], count: int, left: set[str]) -> tuple[Level, str]:
    """Double claims, lost tasks and double creates from a race's results (pure).

    Args:
        results: what :func:`run_race` returned.
        count: the tasks in the pool (and names in the exclusive set).
        left: the task names still in the pool afterwards.
    """
    a, b = set(results["renamed_a"]), set(results["renamed_b"])
    double = a & b
    lost = {f"t{i:05d}" for i in range(count)} - a - b - left
    double_created = set(results["created_a"]) & set(results["created_b"])
    problems = []
    if double:
        problems.append(f"{len(double)} of {count} tasks were claimed by both processes")
    if lost:
        problems.append(f"{len(lost)} tasks were lost (claimed by nobody, gone from the pool)")
    if double_created:
        problems.append(f"{len(double_created)} of {count} O_EXCL creates succeeded twice")
    if problems:
        return Level.FAIL, "; ".join(problems) + ": rename or O_EXCL is not exclusive here"
    return Level.OK, f"{count} tasks: {len(a)} + {len(b)} claims, none twice, none lost"


def check_race(report: Report, scratch: Path, peer_scratch: Path | None) -> None:
    """Race two processes (the second through the peer mount when given) and judge it."""
    where = "two mounts" if peer_scratch else "one mount"
    try:
        results = run_race(scratch, peer_scratch)
    except OSError as exc:
        report.add("rename-race", Level.FAIL, str(exc))
        return
    left = set(names(scratch / "pool"))
    level, detail = judge_race(results, RACE_TASKS, left)
    report.add("rename-race", level, f"{detail} ({where})")


def check_listing(report: Report, scratch: Path, peer_scratch: Path, timeout_s: float) -> None:
    """Time until a file made through one mount shows in, then leaves, the peer's listing."""
    name = f"fresh-{os.getpid()}"
    (scratch / name).write_bytes(b"x")
    appear = _wait_listing(peer_scratch, name, present=True, timeout_s=timeout_s)
    (scratch / name).unlink()
    vanish = _wait_listing(peer_scratch, name, present=False, timeout_s=timeout_s)
    if appear is None or vanish is None:
        report.add(
            "listing-freshness",
            Level.FAIL,
            f"a file made through {scratch} did not {'appear in' if appear is None else 'leave'} "
            f"the listing through {peer_scratch} within {timeout_s:g} s (a directory cache longer than that, or not the same share)",
        )
        return
    worst = max(appear, vanish)
    level = Level.WARN if worst > FRESH_WARN_S else Level.OK
    report.add(
        "listing-freshness",
        level,
        f"seen through the peer mount after {appear:.2f} s, gone after {vanish:.2f} s"
        + (
            " (claims and heartbeats will lag that much: lower the attribute cache)"
            if level
            else ""
        ),
    )


def _wait_listing(folder: Path, name: str, *, present: bool, timeout_s: float) -> float | None:
    began = time.monotonic()
    while time.monotonic() - began < timeout_s:
        if (name in names(folder)) == present:
            return time.monotonic() - began
        time.sleep(0.05)
    return None
