"""bench.diskprobe: the cost of making a file in a real folder, and the folder left as found."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.diskprobe import create_us
from bench.report import machine

if TYPE_CHECKING:
    from pathlib import Path


def test_the_probe_times_real_files_and_leaves_nothing_behind(tmp_path: Path) -> None:
    (tmp_path / "kept").write_text("x")
    cost = create_us(tmp_path)
    assert cost is not None
    assert 0 < cost < 1e6  # µs per file: a sanity bound only
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]


def test_a_folder_where_no_file_can_be_made_gives_none(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    assert create_us(tmp_path / "file" / "below") is None  # a file where a folder should be


def test_every_table_records_its_scratch_folder_and_its_cost(tmp_path: Path) -> None:
    m = machine(tmp_path)
    assert m["scratch"] == str(tmp_path)
    assert isinstance(m["file_create_us"], float)
    assert machine()["file_create_us"] is None
