"""A build folder handed to a job's owner and taken back: real files, real chown (as root)."""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

import pytest

from prsd.envs.ownerbuild import HardLinked, hand_over, owner_cache, take_back
from prsd.owner import RunAs

if TYPE_CHECKING:
    from pathlib import Path

OWNER = RunAs(uid=4242, gid=4343, groups=(), name="someone")


def _build_folder(tmp_path: Path) -> Path:
    prefix = tmp_path / "build"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib" / "site-packages").mkdir(parents=True)
    (prefix / "bin" / "tool").write_text("#!/bin/sh\n")
    (prefix / "bin" / "python").symlink_to("/usr/bin/python3")
    (prefix / "lib64").symlink_to("lib")
    return prefix


def test_the_owner_gets_the_folder_and_root_takes_it_back(tmp_path: Path) -> None:
    assert os.geteuid() == 0, "the suite runs as root"
    prefix = _build_folder(tmp_path)
    hand_over(prefix, OWNER)
    every = [prefix, *prefix.rglob("*")]
    assert {p.lstat().st_uid for p in every} == {4242}
    assert os.stat("/usr/bin/python3").st_uid == 0, "a link's target is never changed"
    made = prefix / "lib" / "site-packages" / "mod.py"  # what the owner's build writes
    made.write_text("x = 1\n")
    os.lchown(made, 4242, 4343)
    os.chmod(made, 0o6777)
    take_back(prefix)
    every = [prefix, *prefix.rglob("*")]
    assert {(p.lstat().st_uid, p.lstat().st_gid) for p in every} == {(0, 0)}
    assert stat.S_IMODE(made.stat().st_mode) == 0o755


def test_a_hard_link_to_a_file_elsewhere_is_refused_and_left_alone(tmp_path: Path) -> None:
    prefix = _build_folder(tmp_path)
    outside = tmp_path / "someone-elses"
    outside.write_text("secret\n")
    os.lchown(outside, 5151, 5151)
    os.chmod(outside, 0o4766)  # after the chown, which clears set-id bits
    hand_over(prefix, OWNER)
    os.link(outside, prefix / "lib" / "site-packages" / "linked.py")
    with pytest.raises(HardLinked, match="the build left a hard link, .*linked.py"):
        take_back(prefix)
    info = outside.stat()
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (5151, 0o4766)
    assert (prefix / "bin" / "tool").stat().st_uid == 4242, "nothing was changed"


def test_the_owners_uv_cache_is_private(tmp_path: Path) -> None:
    mine = owner_cache(tmp_path / "cache", OWNER)
    assert mine == tmp_path / "cache" / ".uv-cache-owners" / "4242"
    info = mine.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (4242, 4343, 0o700)
