"""MLTable steps on chunks of a table read in order: counters, comparisons, conversions."""

from __future__ import annotations

import pandas as pd
import pytest

from prsd.errors import InputError
from prsd.inputsplit.tabular.mlapply import Steps, partition_pattern


def _chunks(n: int, size: int) -> list[pd.DataFrame]:
    return [pd.DataFrame({"a": list(range(i, min(i + size, n)))}) for i in range(0, n, size)]


def _run(steps: list[dict[str, object]], chunks: list[pd.DataFrame]) -> list[int]:
    applied = Steps(steps)
    out = [applied.apply(c, "/d/f.csv") for c in chunks]
    return [int(v) for frame in out for v in frame["a"]]


@pytest.mark.parametrize("size", [1, 3, 7, 100])
def test_skip_filter_take_count_rows_of_the_whole_table(size: int) -> None:
    """The same rows whatever the chunk size: the counters span chunks."""
    steps = [
        {"op": "skip", "count": 2},
        {"op": "filter", "column": "a", "cmp": ">", "value": 4},
        {"op": "take", "count": 4},
    ]
    assert _run(steps, _chunks(20, size)) == [5, 6, 7, 8]


def test_take_before_filter_differs_from_after() -> None:
    """Order matters, as in the MLTable file."""
    take_first = [
        {"op": "take", "count": 5},
        {"op": "filter", "column": "a", "cmp": ">=", "value": 3},
    ]
    assert _run(take_first, _chunks(20, 3)) == [3, 4]


def test_a_full_take_ends_the_reading() -> None:
    """Once take has its rows, done says no later row can pass."""
    steps = Steps([{"op": "take", "count": 2}])
    steps.apply(pd.DataFrame({"a": [1, 2, 3]}), "f")
    assert steps.done and steps.apply(pd.DataFrame({"a": [4]}), "f").empty


def test_filter_null_and_strings() -> None:
    """== null keeps missing values; strings compare as strings."""
    frame = pd.DataFrame({"c": ["Paris", None, "Lyon"]})
    nulls = Steps([{"op": "filter", "column": "c", "cmp": "==", "value": None}])
    assert nulls.apply(frame, "f")["c"].isna().tolist() == [True]
    paris = Steps([{"op": "filter", "column": "c", "cmp": "==", "value": "Paris"}])
    assert paris.apply(frame, "f")["c"].tolist() == ["Paris"]


def test_conversions_follow_the_mltable_types() -> None:
    """int (float with nulls), float, string, boolean, datetime."""
    frame = pd.DataFrame(
        {
            "i": ["1", "2"],
            "n": ["1", None],
            "s": [1.0, 2.5],
            "b": ["true", "0"],
            "d": ["2024-01-02", "2024-02-03"],
        }
    )
    step = {
        "op": "convert_column_types",
        "conversions": [
            {"columns": ["i", "n"], "type": "int"},
            {"columns": ["s"], "type": "string"},
            {"columns": ["b"], "type": "boolean"},
            {"columns": ["d"], "type": "datetime"},
        ],
    }
    out = Steps([step]).apply(frame, "f")
    assert [out[c].dtype.kind for c in "insbd"] == ["i", "f", "O", "b", "M"]
    assert out["s"].tolist() == ["1", "2.5"] and out["b"].tolist() == [True, False]


def test_a_missing_column_or_a_bad_value_names_the_step_and_file() -> None:
    """InputError with the step, the column and the file."""
    frame = pd.DataFrame({"a": ["x"]})
    with pytest.raises(InputError, match=r"drop_columns: /d/f.csv has no column 'b'"):
        Steps([{"op": "drop_columns", "columns": ["b"]}]).apply(frame, "/d/f.csv")
    convert = {"op": "convert_column_types", "conversions": [{"columns": ["a"], "type": "int"}]}
    with pytest.raises(InputError, match=r"column 'a' of /d/f.csv is not int"):
        Steps([convert]).apply(frame, "/d/f.csv")


@pytest.mark.parametrize(
    ("fmt", "path", "expected"),
    [
        ("Store{store}/{brand}/data.csv", "/t/Store1000/tropicana/data.csv", ["1000", "tropicana"]),
        ("{store}/data.csv", "/t/2024/s1/data.csv", ["s1"]),
        ("{year}/{store}/", "/tmp/said/x.csv", ["tmp", "said"]),
    ],
)
def test_partition_format_is_searched_in_the_path(fmt: str, path: str, expected: list[str]) -> None:
    """As the mltable package: each {name} one path segment, found anywhere in the path."""
    pattern, names = partition_pattern(fmt)
    found = pattern.search(path)
    assert found is not None and list(found.groups()) == expected and len(names) == len(expected)


def test_a_path_that_does_not_fit_fails_unless_errors_are_ignored() -> None:
    """No match: an InputError, or null columns with ignore_errors."""
    frame = pd.DataFrame({"a": [1]})
    step = {"op": "extract_columns_from_partition_format", "format": "Store{s}/x.csv"}
    with pytest.raises(InputError, match="does not fit"):
        Steps([step]).apply(frame, "/t/other.csv")
    out = Steps([{**step, "ignore_errors": True}]).apply(frame, "/t/other.csv")
    assert out["s"].isna().all()
