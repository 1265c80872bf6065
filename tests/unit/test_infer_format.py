"""Which format an input without input_format has: real folders, real files."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from prsd.jobspec.infer import infer_format

if TYPE_CHECKING:
    from pathlib import Path


def _folder(root: Path, *names: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("a\n1\n", encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (("a.csv", "sub/b.csv", "_SUCCESS", ".a.csv.crc"), ("csv", ",")),
        (("a.tsv", "b.tsv"), ("csv", "\t")),
        (("a.parquet",), ("parquet", ",")),
        (("x/a.jsonl", "y/b.JSONL"), ("jsonl", ",")),
        (("a.csv", "b.tsv"), ("files", ",")),
        (("a.csv", "b.parquet"), ("files", ",")),
        (("a.csv", "b.png"), ("files", ",")),
        ((), ("files", ",")),
    ],
)
def test_a_folder_of_one_tabular_extension_is_a_table(
    tmp_path: Path, names: tuple[str, ...], expected: tuple[str, str]
) -> None:
    """One extension throughout (hidden and _ files left out): that format; else files."""
    fmt, delimiter, notes = infer_format([(_folder(tmp_path / "d", *names), None)])
    assert (fmt, delimiter) == expected
    assert bool(notes) == (fmt != "files")


def test_a_uri_folder_is_inferred_a_uri_file_is_not(tmp_path: Path) -> None:
    """uri_folder of .csv files: csv; a uri_file naming a .csv: its path, as on Azure."""
    folder = _folder(tmp_path / "d", "a.csv")
    assert infer_format([(folder, "uri_folder")])[0] == "csv"
    assert infer_format([(folder / "a.csv", "uri_file")])[0] == "files"
    assert infer_format([(folder / "a.csv", None)])[0] == "csv"


@pytest.mark.parametrize("size", [10, "10", " 64 "])
def test_a_count_keeps_a_folder_of_tables_as_files_with_a_note(
    tmp_path: Path, size: object
) -> None:
    """mini_batch_size as a count is Azure's files-per-mini-batch: files, and a note why."""
    fmt, _, notes = infer_format([(_folder(tmp_path / "d", "a.csv"), None)], mini_batch_size=size)
    assert fmt == "files"
    assert "mini_batch_size is a count" in notes[0] and "input_format: csv" in notes[0]


def test_a_size_or_no_size_reads_a_table(tmp_path: Path) -> None:
    """A size with a unit, or none: the folder is one table, said in a note."""
    folder = _folder(tmp_path / "d", "a.parquet")
    for size in ("64KB", None):
        fmt, _, notes = infer_format([(folder, None)], mini_batch_size=size)
        assert fmt == "parquet" and "input_format: files" in notes[0]


def test_partition_format_keeps_files(tmp_path: Path) -> None:
    """Keys from the folder layout: a files input."""
    folder = _folder(tmp_path / "d", "u1/a.csv")
    assert infer_format([(folder, None)], partition_format=True)[0] == "files"


def test_partition_keys_read_a_table_whatever_the_count(tmp_path: Path) -> None:
    """With partition_keys the size is moot: a count does not keep files."""
    folder = _folder(tmp_path / "d", "a.csv")
    assert infer_format([(folder, None)], mini_batch_size="10", partition_keys=True)[0] == "csv"


@pytest.mark.parametrize(
    ("odd", "expected"),
    [(None, "csv"), ("0000.txt", "files"), ("zzzz.txt", "files"), ("_zz.txt", "csv")],
)
def test_a_big_folder_is_judged_by_all_its_files_in_order(
    tmp_path: Path, odd: str | None, expected: str
) -> None:
    """A big folder is read in the file system's order and judged by all its files: the
    first name, the last and a left-out one count wherever they are listed."""
    folder = tmp_path / "d"
    folder.mkdir()
    for i in range(5000):
        (folder / f"r{i:05d}.csv").write_bytes(b"")
    if odd is not None:
        (folder / odd).write_bytes(b"")
    assert infer_format([(folder, None)])[0] == expected
