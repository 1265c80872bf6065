"""Run-as-owner: whose identity a job's workers get (pure rules) and the user database edge."""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from prsd.owner import (
    JobOwnerRefused,
    RunAs,
    allow_others_from_env,
    decide,
    hand_over,
    identity,
    make_files_for,
    run_as_for_job,
    unreadable_for,
)
from prsd.spool.jobowner import owner_of_folder, write_job_owner
from prsd.spool.layout import JobLayout

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.mark.parametrize(
    ("owner", "service", "allow", "action"),
    [
        (1000, 0, False, "switch"),  # root agent: the owner's identity
        (0, 0, False, "self"),  # root only when root owns the job
        (1000, 1000, False, "self"),  # a user's own agent
        (1001, 1000, False, "refuse"),  # someone else's job: refused
        (1001, 1000, True, "self"),  # ... unless configured, then as the service user
        (0, 1000, False, "refuse"),  # a root-owned job never runs under a non-root agent by default
    ],
)
def test_decide(owner: int, service: int, allow: bool, action: str) -> None:
    """The decision table of docs/security.md."""
    decision = decide(owner, service, allow_others=allow)
    assert decision.action == action
    if action == "refuse":
        assert f"uid {owner}" in decision.reason and "PRSD_RUN_OTHERS_JOBS=1" in decision.reason


@pytest.mark.parametrize(
    ("value", "allowed"), [("1", True), ("yes", True), ("", False), ("0", False)]
)
def test_allow_others_from_env(value: str, allowed: bool) -> None:
    """Only an explicit yes lets a non-root agent run others' jobs."""
    assert allow_others_from_env({"PRSD_RUN_OTHERS_JOBS": value}) is allowed


def test_identity_of_a_known_and_an_unknown_uid() -> None:
    """Supplementary groups come from the user database; an unknown uid gets none."""
    me = pwd.getpwuid(os.getuid())
    known = identity(me.pw_uid, me.pw_gid)
    assert known.name == me.pw_name and me.pw_gid in known.groups
    unknown = identity(2_000_000_001, 2_000_000_001)
    assert unknown.groups == () and unknown.name == "2000000001"
    assert unknown.spawn_args() == {
        "user": 2_000_000_001,
        "group": 2_000_000_001,
        "extra_groups": [],
    }


def test_symlinked_job_folder_is_refused(tmp_path: Path) -> None:
    """A job folder that is a symlink is never run (its target could be anyone's)."""
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "job"
    link.symlink_to(real)
    with pytest.raises(JobOwnerRefused, match="not a folder"):
        run_as_for_job(JobLayout(link, "job"))
    layout = JobLayout(real, "real")
    with pytest.raises(JobOwnerRefused, match="owner is unknown"):
        run_as_for_job(layout, allow_others=False)  # no owner.json: never guessed
    write_job_owner(layout, owner_of_folder(real))
    assert run_as_for_job(layout, allow_others=False) is None  # our own job: no switch


def test_hand_over_never_follows_a_symlink(tmp_path: Path) -> None:
    """A link planted where a log file goes is changed itself, its target keeps its owner."""
    target = tmp_path / "target"
    target.write_text("x")
    before = os.stat(target)
    link = tmp_path / "link"
    link.symlink_to(target)
    who = identity(os.getuid(), os.getgid())
    hand_over(who, [link])
    assert os.stat(target).st_uid == before.st_uid
    with pytest.raises(OSError):
        make_files_for(who, [link])  # O_NOFOLLOW: no file is created through a link


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A folder under /tmp that other users may enter (pytest's own tmp root is 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="prsd-readable-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def test_unreadable_for_names_the_folder_a_worker_may_not_enter(open_tmp: Path) -> None:
    """Real files and modes: a 0700 folder on the way stops another uid; 0755 does not."""
    other = RunAs(uid=54321, gid=54321, groups=(), name="someone")
    tmp_path = open_tmp
    folder = tmp_path / "install"
    boot = folder / "prsd" / "worker" / "boot.py"
    boot.parent.mkdir(parents=True)
    boot.write_text("pass\n")
    for p in (tmp_path, folder, folder / "prsd", boot.parent):
        p.chmod(0o755)
    boot.chmod(0o644)
    assert unreadable_for(other, str(boot)) is None
    folder.chmod(0o700)
    why = unreadable_for(other, str(boot))
    assert why is not None and f"may not enter {folder}" in why and "drwx------" in why
    folder.chmod(0o750)  # the group may enter: a supplementary group of the user will do
    os.chown(folder, 0, 54320)
    assert unreadable_for(other, str(boot)) is not None
    member = RunAs(uid=54321, gid=54321, groups=(54320,), name="member")
    assert unreadable_for(member, str(boot)) is None
    folder.chmod(0o755)
    boot.chmod(0o600)
    assert "may not read" in (unreadable_for(other, str(boot)) or "")
    assert unreadable_for(RunAs(uid=0, gid=0, groups=(), name="root"), str(boot)) is None
    boot.chmod(0o644)
    folder.chmod(0o711)  # enter but not list: Python cannot find prsd/ in it
    assert unreadable_for(other, str(boot)) is None
    why = unreadable_for(other, str(boot), list_from=str(folder))
    assert why is not None and f"may not list {folder}" in why
    tmp_path.chmod(0o711)  # above the installation, entering is enough
    folder.chmod(0o755)
    assert unreadable_for(other, str(boot), list_from=str(folder)) is None
