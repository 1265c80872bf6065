"""The agent prepares a worker's folders and files from the job's folder, never through a link."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from prsd.owner import JobOwnerRefused, RunAs, make_dirs_for, make_files_for

if TYPE_CHECKING:
    from pathlib import Path

ME = RunAs(os.geteuid(), os.getegid(), (), "me")


def test_folders_and_files_are_made_under_the_job(tmp_path: Path) -> None:
    """Missing folders are created, files created empty, all reached from the anchor."""
    job = tmp_path / "job"
    job.mkdir()
    make_dirs_for(ME, [job / "work" / "n1" / "process000"], anchor=job)
    make_files_for(ME, [job / "logs" / "user" / "stdout" / "n1" / "p.txt"], anchor=job)
    assert (job / "work" / "n1" / "process000").is_dir()
    assert (job / "logs" / "user" / "stdout" / "n1" / "p.txt").read_bytes() == b""


@pytest.mark.parametrize("planted", ["work", "work/n1"])
def test_a_planted_link_on_the_way_is_refused(tmp_path: Path, planted: str) -> None:
    """work/ (or a folder below it) replaced by a link: refused, nothing made at its target."""
    job, target = tmp_path / "job", tmp_path / "target"
    job.mkdir()
    target.mkdir()
    link = job / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    with pytest.raises(JobOwnerRefused, match="symbolic link"):
        make_dirs_for(ME, [job / "work" / "n1" / "process001"], anchor=job)
    with pytest.raises(JobOwnerRefused, match="symbolic link"):
        make_files_for(ME, [job / "work" / "n1" / "x.txt"], anchor=job)
    assert list(target.iterdir()) == []


def test_a_planted_link_in_place_of_the_file_is_refused(tmp_path: Path) -> None:
    """The file itself a link: refused (O_NOFOLLOW), its target untouched."""
    job = tmp_path / "job"
    (job / "results").mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (job / "results" / ".tmp-x.res").symlink_to(victim)
    with pytest.raises(JobOwnerRefused, match="cannot prepare"):
        make_files_for(ME, [job / "results" / ".tmp-x.res"], anchor=job)
    assert victim.read_text() == "keep\n"
