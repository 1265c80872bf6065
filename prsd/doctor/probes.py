"""The quick checks of a spool, run by ``prsd doctor`` and at every daemon start-up.

Each check looks at the real spool: the mount type from ``/proc/self/mountinfo``,
permissions, free space, and the single-node semantics of the operations the claim
protocol uses (``O_EXCL``, rename of a moved file, rename over an existing file) in
a scratch folder ``.doctor/<host>-<pid>-<hex>/`` that is removed afterwards. They take
milliseconds. What one node cannot show (two clients racing) is in :mod:`race`.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import stat
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING

from prsd.spool.fstype import Level, classify, spool_mount
from prsd.spool.layout import SpoolLayout

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from prsd.doctor.findings import Report

SCRATCH = ".doctor"
MIN_FREE_BYTES = 256 * 1024 * 1024
LOW_FREE_BYTES = 2 * 1024 * 1024 * 1024
SKEW_WARN_S = 2.0


@contextmanager
def scratch_dir(spool: Path) -> Iterator[Path]:
    """A fresh folder under ``<spool>/.doctor/``, removed (without following links) at exit."""
    host = socket.gethostname().split(".")[0] or "host"
    path = spool / SCRATCH / f"{host}-{os.getpid()}-{secrets.token_hex(3)}"
    path.mkdir(parents=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def check_mount(report: Report, spool: Path, *, unsafe: bool) -> None:
    """The file-system type: blob mounts fail unless ``unsafe``."""
    mount = spool_mount(str(spool))
    if mount is None:
        report.add("mount-type", Level.WARN, "cannot read /proc/self/mountinfo")
        return
    verdict = classify(mount)
    level = verdict.level
    detail = verdict.reason
    if level is Level.FAIL and unsafe:
        level, detail = Level.WARN, f"{detail} (accepted by --unsafe-spool: expect double claims)"
    notes = "; ".join(verdict.notes)
    report.add("mount-type", level, f"{detail}" + (f" ({notes})" if notes else ""))


def check_permissions(report: Report, spool: Path) -> None:
    """The service can write the spool; nobody else can forge tasks or heartbeats."""
    if not os.access(spool, os.W_OK | os.X_OK):
        report.add("permissions", Level.FAIL, f"{spool} is not writable by uid {os.getuid()}")
        return
    problems = []
    layout = SpoolLayout(spool)
    for folder in (layout.jobs, layout.nodes, layout.leader, layout.active):
        try:
            mode = os.lstat(folder).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode) or not stat.S_ISDIR(mode):
            report.add("permissions", Level.FAIL, f"{folder} is not a plain folder")
            return
        if not os.access(folder, os.W_OK | os.X_OK):
            report.add("permissions", Level.FAIL, f"{folder} is not writable by uid {os.getuid()}")
            return
        if mode & stat.S_IWOTH:
            problems.append(f"{folder.name}/ is writable by everyone (chmod o-w)")
    problems.extend(shared_folder_problems(spool))
    if problems:
        report.add("permissions", Level.WARN, "; ".join(problems))
    else:
        report.add("permissions", Level.OK, f"writable by uid {os.getuid()}")


def shared_folder_problems(spool: Path) -> list[str]:
    """``inbox/`` and ``requests/`` must be sticky where everyone may write them.

    ``requests/`` must also be writable by everyone, or users cannot cancel their jobs.
    """
    problems = []
    layout = SpoolLayout(spool)
    for folder in (layout.inbox, layout.requests):  # every user writes these: 1777, sticky
        try:
            mode = os.lstat(folder).st_mode
        except FileNotFoundError:
            continue
        if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
            problems.append(
                f"{folder.name}/ is writable by everyone without the sticky bit (chmod +t)"
            )
        elif folder == layout.requests and not mode & stat.S_IWOTH:
            problems.append(
                "requests/ is not writable by everyone: users cannot cancel their jobs (chmod 1777)"
            )
    return problems


def check_free_space(report: Report, spool: Path, *, min_free_bytes: int = MIN_FREE_BYTES) -> None:
    """Free space (for this user) and free inodes on the spool's file system."""
    st = os.statvfs(spool)
    free = st.f_bavail * st.f_frsize
    shown = f"{free / 2**30:.1f} GiB free"
    if free < min_free_bytes:
        report.add("free-space", Level.FAIL, f"only {shown}; at least {min_free_bytes >> 20} MiB")
    elif free < LOW_FREE_BYTES:
        report.add("free-space", Level.WARN, f"{shown}: jobs' outputs and logs may not fit")
    elif st.f_files and st.f_favail < 10_000:
        report.add("free-space", Level.WARN, f"{shown}, but only {st.f_favail} inodes free")
    else:
        report.add("free-space", Level.OK, shown)


def check_exclusive_create(report: Report, scratch: Path) -> None:
    """A second ``O_CREAT|O_EXCL`` of one name fails with EEXIST (leader elections need it)."""
    path = scratch / "excl"
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY
    os.close(os.open(path, flags, 0o644))
    try:
        os.close(os.open(path, flags, 0o644))
    except FileExistsError:
        report.add("o-excl", Level.OK, "a second exclusive create fails with EEXIST")
        return
    except OSError as exc:
        report.add("o-excl", Level.WARN, f"a second exclusive create failed with {exc.strerror}")
        return
    report.add("o-excl", Level.FAIL, "a second O_CREAT|O_EXCL of one name succeeded")


def check_rename(report: Report, scratch: Path) -> None:
    """Rename moves a file whole, a second rename of it fails, a rename replaces its target."""
    src, first, second = scratch / "task", scratch / "claim-a", scratch / "claim-b"
    payload = secrets.token_bytes(4096)
    src.write_bytes(payload)
    inode = src.stat().st_ino
    src.rename(first)
    problems = []
    if src.exists() or first.read_bytes() != payload:
        problems.append("the renamed file was not moved whole")
    if first.stat().st_ino != inode:
        problems.append("rename changed the inode number (copy and delete?)")
    try:
        src.rename(second)
        problems.append("a second rename of a file already moved succeeded")
    except OSError:
        pass
    if second.exists():
        problems.append("a failed rename left its target behind")
    aside = scratch / ".aside"
    aside.write_bytes(b"new")
    aside.replace(first)
    if first.read_bytes() != b"new" or aside.exists():
        problems.append("rename onto an existing file did not replace it")
    if problems:
        report.add("rename", Level.FAIL, "; ".join(problems))
    else:
        report.add("rename", Level.OK, "moves whole, exclusive within this mount, replaces")


def check_clock(report: Report, scratch: Path) -> None:
    """The file server's clock (the mtime it stamps) against this machine's clock."""
    path = scratch / "clock"
    before = time.time()
    path.write_bytes(b"t")
    after = time.time()
    mtime = path.stat().st_mtime
    skew = (
        0.0
        if before - 1 <= mtime <= after + 1
        else (mtime - after if mtime > after else mtime - before)
    )
    if abs(skew) > SKEW_WARN_S:
        report.add(
            "clock-skew",
            Level.WARN,
            f"the spool stamps files {skew:+.1f} s off this machine's clock; prsd does not "
            "compare them, but synchronise clocks (chrony) so logs line up",
        )
    else:
        report.add("clock-skew", Level.OK, f"file times within {SKEW_WARN_S:g} s of this clock")


def quick_checks(report: Report, spool: Path, *, unsafe: bool = False) -> None:
    """Every quick check (what the daemons run at start-up), findings added to ``report``."""
    check_mount(report, spool, unsafe=unsafe)
    check_permissions(report, spool)
    if any(f.check == "permissions" for f in report.failures()):
        return
    check_free_space(report, spool)
    with scratch_dir(spool) as scratch:
        check_exclusive_create(report, scratch)
        check_rename(report, scratch)
        check_clock(report, scratch)
