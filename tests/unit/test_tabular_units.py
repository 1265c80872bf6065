"""Pure parts of tabular planning: sizes, row-group packing, key grouping, folder formats."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from prsd.errors import JobSpecError
from prsd.inputsplit.tabular.folders import format_pattern, group_files, key_values
from prsd.inputsplit.tabular.groups import (
    BUCKET_BYTES,
    MAX_BUCKETS,
    bucket_count,
    group_rows,
    key_column,
    split_by,
)
from prsd.inputsplit.tabular.parquet import RowGroup, pack_row_groups
from prsd.jobspec.values import tabular_batch_size
from prsd.jobspec.yamlsafe import Doc

SITE = Doc(Path("/job/job.yaml"), {}, {"mini_batch_size": 3}).site("mini_batch_size")


@pytest.mark.parametrize(
    ("text", "size_bytes"),
    [
        ("1024", 1024),
        (1024, 1024),
        ("10kb", 10 * 1024),
        ("10KB", 10 * 1024),
        ("1MB", 1024**2),
        ("1mb", 1024**2),
        ("1GB", 1024**3),
        ("1gB", 1024**3),
    ],
)
def test_size_strings(text: object, size_bytes: int) -> None:
    """Sizes are 1024-based and case-insensitive."""
    assert tabular_batch_size(text, SITE) == size_bytes


@pytest.mark.parametrize("text", ["1.5MB", "10 TB", "MB", "0", "-1kb", "1e6"])
def test_bad_size_strings(text: str) -> None:
    """Anything but digits and kb/mb/gb is an error located in job.yaml."""
    with pytest.raises(JobSpecError, match=r"job\.yaml:3"):
        tabular_batch_size(text, SITE)


def _rg(*sizes: int) -> list[RowGroup]:
    return [RowGroup(i, 10, s) for i, s in enumerate(sizes)]


@pytest.mark.parametrize(
    ("sizes", "limit", "expected"),
    [
        ((100,), 10, [[0]]),  # one row group: one mini-batch, whatever its size
        ((4, 4, 4, 4), 8, [[0, 1], [2, 3]]),
        ((4, 4, 4, 4), 7, [[0], [1], [2], [3]]),
        ((3, 20, 3, 3), 10, [[0], [1], [2, 3]]),  # a large one travels alone
        ((1, 1, 1), 1000, [[0, 1, 2]]),
        ((), 10, []),
    ],
)
def test_row_group_packing(sizes: tuple[int, ...], limit: int, expected: list[list[int]]) -> None:
    """Consecutive row groups up to the size, never fewer than one."""
    got = [[g.index for g in run] for run in pack_row_groups(_rg(*sizes), limit)]
    assert got == expected


def test_grouping_numbers_keys_by_first_appearance_with_nulls() -> None:
    """Combinations are numbered in order of first appearance; None is a value of its own."""
    stores = pa.array(["2", "1", "2", "", "1", None, "2"])
    brands = pa.array(["x", "x", "y", "x", "x", "x", "x"])
    columns = [key_column(c, empty_is_null=True) for c in (stores, brands)]
    groups = group_rows(columns)
    assert groups.keys == [("2", "x"), ("1", "x"), ("2", "y"), (None, "x")]
    assert groups.codes.tolist() == [0, 1, 2, 3, 1, 3, 0]
    parts = split_by(groups.codes, len(groups.keys))
    assert [p.tolist() for p in parts] == [[0, 6], [1, 4], [2], [3, 5]]


def test_typed_keys_become_text() -> None:
    """Integers, floats and booleans become their Arrow text; nulls stay None."""
    column = key_column(pa.array([1000, None, 7, 1000]), empty_is_null=False)
    assert [column.values[c] for c in column.codes] == ["1000", None, "7", "1000"]
    mixed = pa.chunked_array([pa.array([1.5, 2.0]), pa.array([1.5])])
    groups = group_rows([key_column(mixed, empty_is_null=False)])
    assert groups.keys == [("1.5",), ("2",)]
    assert groups.codes.tolist() == [0, 1, 0]


def test_split_keeps_input_order_within_a_group() -> None:
    """Row positions of a group stay ascending (row order is preserved)."""
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 7, 10_000).astype(np.intp)
    parts = split_by(codes, 7)
    assert sum(len(p) for p in parts) == len(codes)
    for code, part in enumerate(parts):
        assert (np.diff(part) > 0).all()
        assert (codes[part] == code).all()


def test_bucket_count_grows_with_input_and_is_capped() -> None:
    """About one bucket per BUCKET_BYTES, at least one, at most MAX_BUCKETS."""
    assert bucket_count(0) == 1
    assert bucket_count(3 * BUCKET_BYTES) == 4
    assert bucket_count(10**15) == MAX_BUCKETS


def test_partition_format_matches_segments() -> None:
    """``{name}`` takes one path segment (or part of one); the rest is literal."""
    pattern = format_pattern("/{user}/{season}/{genre}.wav")
    assert key_values("ann/2020/jazz.wav", pattern, ["user", "genre"]) == ("ann", "jazz")
    assert key_values("ann/2020/x/jazz.wav", pattern, ["user"]) is None
    assert key_values("ann/2020/jazz.mp3", pattern, ["user"]) is None
    with pytest.raises(ValueError, match="unique name"):
        format_pattern("{a}/{a}.wav")


def test_group_files_in_first_appearance_order() -> None:
    """One mini-batch per key combination; unmatched files are reported and skipped."""
    pattern = format_pattern("{user}/{season}/{genre}.wav")
    files = [
        ("/d/ann/1/jazz.wav", "ann/1/jazz.wav"),
        ("/d/ann/1/rock.wav", "ann/1/rock.wav"),
        ("/d/ann/2/jazz.wav", "ann/2/jazz.wav"),
        ("/d/bob/1/jazz.wav", "bob/1/jazz.wav"),
        ("/d/readme.txt", "readme.txt"),
    ]
    skipped: list[str] = []
    mbs = list(group_files(files, pattern, ["user", "genre"], lambda p, _: skipped.append(p)))
    assert [(mb.index, mb.payload, mb.key) for mb in mbs] == [
        (0, ["/d/ann/1/jazz.wav", "/d/ann/2/jazz.wav"], {"user": "ann", "genre": "jazz"}),
        (1, ["/d/ann/1/rock.wav"], {"user": "ann", "genre": "rock"}),
        (2, ["/d/bob/1/jazz.wav"], {"user": "bob", "genre": "jazz"}),
    ]
    assert skipped == ["/d/readme.txt"]
