"""Folders opened under an anchor without links, result files read by descriptor, the merge's publish."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from prsd.asowner.outputs import OwnerOpError
from prsd.leader.intake.outplace import OutputPlace
from prsd.leader.run.merge import OrderedMerge, Piece
from prsd.spool.dirfd import UnsafeFolder, check_owner, open_under, same_folder
from prsd.spool.resultfiles import UntrustedResult, open_result, read_result
from prsd.spool.taskrecords import ResultMeta
from prsd.wire.records import Outcome

if TYPE_CHECKING:
    from pathlib import Path


def _result(path: Path, rows: bytes) -> None:
    meta = ResultMeta(
        "000000000.a1.e1", "n1", (Outcome(0, "succeeded", offset=0, length=len(rows)),)
    )
    path.write_bytes(rows + meta.encode())


def test_open_under_walks_and_creates(tmp_path: Path) -> None:
    """Missing folders are made on request; the descriptor is on the named folder."""
    fd = open_under(tmp_path, ("a", "b"), create_mode=0o755)
    try:
        assert os.fstat(fd).st_ino == (tmp_path / "a" / "b").stat().st_ino
    finally:
        os.close(fd)


@pytest.mark.parametrize("where", ["first", "last"])
def test_open_under_never_follows_a_link(tmp_path: Path, where: str) -> None:
    """A symlink at any component below the anchor is refused by name, not followed."""
    target = tmp_path / "target"
    (target / "b").mkdir(parents=True)
    anchor = tmp_path / "anchor"
    if where == "first":
        anchor.mkdir()
        (anchor / "a").symlink_to(target)
    else:
        (anchor / "a").mkdir(parents=True)
        (anchor / "a" / "b").symlink_to(target / "b")
    with pytest.raises(UnsafeFolder, match="symbolic link"):
        open_under(anchor, ("a", "b"), create_mode=0o755)


@pytest.mark.parametrize("part", ["..", ".", "", "a/b"])
def test_open_under_refuses_non_names(tmp_path: Path, part: str) -> None:
    """``..`` and friends are not folder names."""
    with pytest.raises(UnsafeFolder, match="not a folder name"):
        open_under(tmp_path, (part,), create_mode=0o755)


def test_missing_folder_without_create(tmp_path: Path) -> None:
    """Without create_mode a missing folder is refused."""
    with pytest.raises(UnsafeFolder, match="does not exist"):
        open_under(tmp_path, ("nope",))


def test_check_owner_and_same_folder(tmp_path: Path) -> None:
    """The owner is checked on the descriptor; two opens of one folder are the same folder."""
    a, b = open_under(tmp_path, ()), open_under(tmp_path, ())
    try:
        assert same_folder(a, b)
        check_owner(a, tmp_path, {os.geteuid()})
        with pytest.raises(UnsafeFolder, match="belongs to uid"):
            check_owner(a, tmp_path, {os.geteuid() + 4242})
    finally:
        os.close(a)
        os.close(b)


def test_result_read_by_descriptor(tmp_path: Path) -> None:
    """The metadata comes with the file's identity; a swapped file or a link is refused."""
    res = tmp_path / "r.res"
    _result(res, b"row\n")
    found = read_result(res)
    assert found is not None and found.meta.outcomes[0].length == 4
    fd = open_result(res, found.ident)
    assert fd is not None
    os.close(fd)
    other = tmp_path / "other.res"
    _result(other, b"row\n")
    other.rename(res)  # the owner swaps the file under the same name
    with pytest.raises(UntrustedResult, match="replaced"):
        open_result(res, found.ident)
    secret = tmp_path / "secret"
    secret.write_text("root only\n")
    res.unlink()
    res.symlink_to(secret)
    with pytest.raises(UntrustedResult, match="symbolic link"):
        read_result(res)
    res.unlink()
    os.mkfifo(res)
    with pytest.raises(UntrustedResult, match="not a regular file"):
        read_result(res)


def test_merge_publish_refuses_a_replaced_folder(tmp_path: Path) -> None:
    """The output folder renamed away and replaced by a link: nothing is published anywhere."""
    job = tmp_path / "job"
    (job / "outputs").mkdir(parents=True)
    res = tmp_path / "r.res"
    _result(res, b"row\n")
    found = read_result(res)
    assert found is not None
    out = job / "outputs" / "out.txt"
    merge = OrderedMerge(out, place=OutputPlace(job, ("outputs",)))
    merge.offer(0, Piece(res, 0, 4, "", found.ident))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (job / "outputs").rename(tmp_path / "moved")
    (job / "outputs").symlink_to(elsewhere)
    with pytest.raises(OwnerOpError, match="symbolic link"):
        merge.finish()
    merge.abandon()
    assert list(elsewhere.iterdir()) == []
    assert list((tmp_path / "moved").iterdir()) == []


def test_merge_publishes_through_the_folder(tmp_path: Path) -> None:
    """The ordinary case: the rows land under the final name, no temp file is left."""
    job = tmp_path / "job"
    job.mkdir()
    res = tmp_path / "r.res"
    _result(res, b"row\n")
    found = read_result(res)
    assert found is not None
    out = job / "outputs" / "out.txt"
    merge = OrderedMerge(out, place=OutputPlace(job, ("outputs",)))
    merge.offer(0, Piece(res, 0, 4, "", found.ident))
    assert merge.finish() == out
    assert out.read_bytes() == b"row\n"
    assert sorted(p.name for p in out.parent.iterdir()) == ["out.txt"]
