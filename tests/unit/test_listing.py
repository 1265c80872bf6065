"""prsd/spool/listing.py on real folders: what each lister keeps, in which order, and
what it raises."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from prsd.spool.listing import listing, names, scan

if TYPE_CHECKING:
    from pathlib import Path


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "f"
    folder.mkdir()
    for name in ("b", "a", ".tmp-c", "c"):
        (folder / name).write_bytes(b"")
    (folder / "d").mkdir()
    (folder / "e").symlink_to("nowhere")
    return folder


def test_listing_sorts_and_leaves_out_dot_names(tmp_path: Path) -> None:
    assert listing(_folder(tmp_path)) == ["a", "b", "c", "d", "e"]


def test_listing_of_a_missing_folder_is_empty_but_other_faults_raise(tmp_path: Path) -> None:
    assert listing(tmp_path / "missing") == []
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(NotADirectoryError):
        listing(tmp_path / "file")


def test_names_keeps_every_name_as_the_kernel_lists_it(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    assert names(folder) == os.listdir(folder)  # the kernel's order, dot names kept
    assert sorted(names(str(folder))) == [".tmp-c", "a", "b", "c", "d", "e"]
    with pytest.raises(FileNotFoundError):
        names(tmp_path / "missing")


def test_names_lists_the_folder_open_on_a_descriptor(tmp_path: Path) -> None:
    fd = os.open(_folder(tmp_path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert sorted(names(fd)) == [".tmp-c", "a", "b", "c", "d", "e"]
    finally:
        os.close(fd)


def test_scan_gives_each_entry_with_its_kind(tmp_path: Path) -> None:
    kinds = {
        e.name: (e.is_file(follow_symlinks=False), e.is_dir(follow_symlinks=False), e.is_symlink())
        for e in scan(_folder(tmp_path))
    }
    assert kinds == {
        ".tmp-c": (True, False, False),
        "a": (True, False, False),
        "b": (True, False, False),
        "c": (True, False, False),
        "d": (False, True, False),
        "e": (False, False, True),
    }


def test_scan_raises_at_the_first_entry_asked_for(tmp_path: Path) -> None:
    entries = scan(tmp_path / "missing")
    with pytest.raises(FileNotFoundError):
        next(entries)
    assert list(scan(tmp_path)) == []
