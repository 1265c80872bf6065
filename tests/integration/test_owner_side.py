"""The owner-side process: a real process with a real user's ids, the kernel deciding.

Root (the suite) asks a helper running as alice to make outputs, publish them, read
kept results. Whatever root could do, the helper can do only what alice may: her own
folders work, carol's private folder and root's folder are refused with the errno, and
nothing is made there. A helper killed with ``kill -9`` or stopped (hung) fails the
call in bounded time, and is gone afterwards.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import TYPE_CHECKING

import pytest

from prsd.asowner.outputs import OwnerOpError
from prsd.asowner.side import Helper, OwnerSideGone, owner_side
from prsd.fdio import write_all
from prsd.leader.requests.removal import delete_job_folder
from prsd.owner import identity
from prsd.spool.jobowner import JobOwner, write_job_owner
from prsd.spool.layout import JobLayout
from tests.realusers import (
    daemon_python,
    daemon_pythonpath,
    open_base,
    reachable_checkout,
    real_users,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from tests.realusers import User

pytestmark = pytest.mark.xdist_group("realusers")


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, User, User]]:
    """alice and carol, carol's private folder, root's shared folder; as a root daemon."""
    monkeypatch.setattr(sys, "executable", daemon_python())  # the daemons' interpreter
    monkeypatch.setenv("PYTHONPATH", daemon_pythonpath())
    with real_users(2) as (alice, carol), reachable_checkout(), open_base("prsd-side-") as base:
        for user in (alice, carol):
            (base / user.name).mkdir()
            os.chown(base / user.name, user.uid, user.gid)
        os.chmod(base / carol.name, 0o700)
        (base / "shared").mkdir(mode=0o755)
        (base / "shared" / "labels.txt").write_text("root's\n")
        yield base, alice, carol


def _write(path: bytes) -> None:
    """A small file under a name that is not UTF-8."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b"x\n")
    os.close(fd)


def _helper(user: User, timeout: float = 10.0) -> Helper:
    return Helper(identity(user.uid, user.gid), timeout=timeout)


def test_outputs_are_made_with_the_owners_rights(world: tuple[Path, User, User]) -> None:
    base, alice, carol = world
    side = _helper(alice)
    try:
        dir_fd, fd = side.open_output(str(base), [alice.name, "out", "deep"], ".tmp", create=True)
        write_all(fd, b"rows\n")
        os.close(fd)
        side.publish(dir_fd, str(base), [alice.name, "out", "deep"], ".tmp", "o.txt", durable=True)
        os.close(dir_fd)
        made = base / alice.name / "out" / "deep" / "o.txt"
        assert made.read_bytes() == b"rows\n"
        for path in (made, made.parent, made.parent.parent):
            assert (path.stat().st_uid, path.stat().st_gid) == (alice.uid, alice.gid)
        assert made.stat().st_mode & 0o777 == 0o644

        with pytest.raises(
            OwnerOpError, match=rf"{carol.name}/private: Permission denied \[EACCES\]"
        ):
            side.open_output(str(base), [carol.name, "private"], ".tmp", create=True)
        assert not (base / carol.name / "private").exists()

        with pytest.raises(OwnerOpError, match=r"shared: Permission denied \[EACCES\]"):
            side.open_output(str(base), ["shared"], ".tmp", create=True)
        assert sorted(p.name for p in (base / "shared").iterdir()) == ["labels.txt"]

        secret = base / "secret.txt"
        secret.write_text("root only\n")
        secret.chmod(0o600)
        with pytest.raises(OwnerOpError, match=r"secret.txt: Permission denied \[EACCES\]"):
            side.open_read(str(secret))
        fd = side.open_read(str(made))
        assert os.pread(fd, 100, 0) == b"rows\n"
        os.close(fd)
    finally:
        side.close()


def test_root_and_the_owner_itself_need_no_helper(world: tuple[Path, User, User]) -> None:
    _, alice, _ = world
    assert isinstance(owner_side(alice.uid, alice.gid), Helper)
    assert not isinstance(owner_side(0, 0), Helper)


def test_a_killed_helper_fails_the_call_and_stays_failed(world: tuple[Path, User, User]) -> None:
    base, alice, _ = world
    side = _helper(alice)
    dir_fd, fd = side.open_output(str(base), [alice.name], ".tmp", create=True)
    os.close(fd)
    assert side.proc is not None
    proc = side.proc
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    start = time.monotonic()
    with pytest.raises(OwnerSideGone, match="killed by signal SIGKILL"):
        side.publish(dir_fd, str(base), [alice.name], ".tmp", "o.txt", durable=True)
    assert time.monotonic() - start < 5
    with pytest.raises(OwnerSideGone):  # the job ends: no silent second helper
        side.discard(dir_fd, ".tmp")
    os.close(dir_fd)
    side.close()
    assert not (base / alice.name / "o.txt").exists()


def test_a_hung_helper_fails_the_call_in_bounded_time(world: tuple[Path, User, User]) -> None:
    base, alice, _ = world
    side = _helper(alice, timeout=1.0)
    dir_fd, fd = side.open_output(str(base), [alice.name], ".tmp", create=True)
    os.close(fd)
    assert side.proc is not None
    proc = side.proc
    os.kill(proc.pid, signal.SIGSTOP)
    start = time.monotonic()
    with pytest.raises(OwnerSideGone, match="did not answer in time"):
        side.publish(dir_fd, str(base), [alice.name], ".tmp", "o.txt", durable=True)
    assert time.monotonic() - start < 5
    os.close(dir_fd)
    assert proc.poll() is not None  # killed, not left stopped


def test_the_owner_side_empties_only_what_the_owner_may(world: tuple[Path, User, User]) -> None:
    """As alice: her files go (an undecodable name too), root's folder inside hers stays."""
    base, alice, _ = world
    mine = base / alice.name
    (mine / "sub").mkdir()
    os.mkdir(os.fsencode(mine / "sub") + b"/caf\xe9")
    _write(os.fsencode(mine / "sub") + b"/caf\xe9/x.txt")
    (mine / "link").symlink_to(base / "shared" / "labels.txt")
    for path in (mine / "sub", mine / "link"):
        os.chown(path, alice.uid, alice.gid, follow_symlinks=False)
    for folder, _, files in os.walk(os.fsencode(mine / "sub")):
        for name in [folder, *(os.path.join(folder, f) for f in files)]:
            os.chown(name, alice.uid, alice.gid)
    (mine / "rootsub").mkdir()
    (mine / "rootsub" / "r.txt").write_text("root's")
    side = _helper(alice)
    fd = os.open(mine, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert side.empty(fd) == 1
    finally:
        os.close(fd)
        side.close()
    assert sorted(p.name for p in mine.iterdir()) == ["rootsub"]
    assert (mine / "rootsub" / "r.txt").read_text() == "root's"
    assert (base / "shared" / "labels.txt").read_text() == "root's\n"


def test_gc_of_a_job_folder_empties_the_owners_folders_first(
    world: tuple[Path, User, User],
) -> None:
    """A removed job's folder: alice's folders emptied as alice, the rest by the daemons;
    a link is never followed and a name that is not UTF-8 does not stop it."""
    base, alice, _ = world
    job = base / "jobs" / ".removed-job-1"
    job.mkdir(parents=True, mode=0o711)
    write_job_owner(JobLayout(job, job.name), JobOwner(alice.uid, alice.gid, alice.name))
    (job / "state").mkdir()
    (job / "state" / "final.json").write_text("{}")
    code = job / "code"
    code.mkdir()
    _write(os.fsencode(code) + b"/caf\xe9.py")
    (code / "etc").symlink_to(base / "shared")
    for path in [code, *code.iterdir()]:
        os.chown(path, alice.uid, alice.gid, follow_symlinks=False)
    delete_job_folder(job)
    assert not job.exists()
    assert (base / "shared" / "labels.txt").read_text() == "root's\n"
