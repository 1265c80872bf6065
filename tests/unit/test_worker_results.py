"""Pure parts of the worker host: result checks, counts, append_row bytes, outcome JSON."""

from __future__ import annotations

import math
import os
from typing import Any

import pandas as pd
import pytest

from prsd.wire.records import Outcome
from prsd.worker.results import (
    ItemCounts,
    WrongResultType,
    accepted_result,
    dataframe_header,
    dataframe_rows,
    encode_result,
    list_rows,
    to_csv_arguments,
    too_many_warning,
)
from prsd.worker.runner import Attempt


def _azure_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "name": ["a b.png", "c.png"],
            "n": [7, 2],
            "score": [0.5, math.nan],
            "note": ['say "hi"', "x"],
        },
        index=[10, 11],
    )


@pytest.mark.parametrize(
    ("result", "expected"),
    [([1, 2], [1, 2]), ((1, 2), [1, 2]), ([], []), ((), [])],
)
def test_lists_and_tuples_are_accepted_as_lists(result: Any, expected: list[Any]) -> None:
    """A list is kept and a tuple becomes a list (Azure's old driver)."""
    assert accepted_result(result, "000000001") == expected


def test_dataframe_is_accepted_as_is() -> None:
    """A DataFrame result is kept unchanged."""
    frame = _azure_frame()
    assert accepted_result(frame, "000000001") is frame


@pytest.mark.parametrize(
    ("result", "type_name"),
    [(None, "NoneType"), ("abc", "str"), ({"a": 1}, "dict"), (pd.Series([1]), "Series")],
)
def test_other_results_are_refused_naming_type_and_id(result: object, type_name: str) -> None:
    """Anything but list, tuple or DataFrame is refused with the type and mini-batch id."""
    with pytest.raises(WrongResultType) as info:
        accepted_result(result, "000000042")
    assert str(info.value) == (
        f"run() returned {type_name} for mini-batch 000000042; "
        "it must return a list, tuple or pandas.DataFrame"
    )


@pytest.mark.parametrize(
    ("items", "returned", "succeeded", "failed", "too_many"),
    [(3, 3, 3, 0, False), (3, 1, 1, 2, False), (3, 0, 0, 3, False), (3, 5, 3, 0, True)],
)
def test_item_counts(
    items: int, returned: int, succeeded: int, failed: int, too_many: bool
) -> None:
    """succeeded = min(returned, items); the rest of the input failed; more is flagged."""
    counts = ItemCounts(items, returned)
    assert (counts.succeeded, counts.failed, counts.too_many) == (succeeded, failed, too_many)


def test_too_many_warning_names_counts_and_id() -> None:
    """The warning says how many came back, for which mini-batch, and the cap."""
    warning = too_many_warning(ItemCounts(2, 4), "000000003")
    assert "4 items for mini-batch 000000003" in warning and "capped at 2" in warning


def test_list_rows_are_str_of_each_element() -> None:
    """Each element is str(x) plus a newline, UTF-8."""
    rows = list_rows(["a", 1, 2.5, ["x", 1], None, "ünï"])
    assert rows == "a\n1\n2.5\n['x', 1]\nNone\nünï\n".encode()


def test_list_rows_write_undecodable_path_bytes_back() -> None:
    """A path with non-UTF-8 bytes (surrogate escapes) is written as its original bytes."""
    assert list_rows([os.fsdecode(b"/data/\xff.png")]) == b"/data/\xff.png\n"


def test_dataframe_rows_match_azure_bytes() -> None:
    """A DataFrame is to_csv(sep=' ', header=False, index=False): quoting and NaN as Azure."""
    assert dataframe_rows(_azure_frame(), {}) == b'"a b.png" 7 0.5 "say ""hi"""\nc.png 2  x\n'


def test_settings_override_and_header() -> None:
    """settings.json arguments win, except the body never carries a header."""
    frame = _azure_frame()
    overrides = {"sep": ",", "header": True, "index": True, "path_or_buf": "/nope"}
    assert to_csv_arguments(overrides) == {"sep": ",", "header": False, "index": True}
    assert dataframe_rows(frame, overrides) == frame.to_csv(sep=",", header=False).encode()
    assert dataframe_header(frame, overrides) == ",name,n,score,note\n"
    assert dataframe_header(frame, {"header": ["A", "B", "C", "D"]}) == "A B C D\n"


def test_encode_result_reports_header_only_for_dataframes() -> None:
    """The header comes with DataFrame results when asked for; lists have none."""
    assert encode_result(["a"], {}, True) == (b"a\n", "")
    data, header = encode_result(_azure_frame(), {"sep": ","}, True)
    assert header == "name,n,score,note\n" and data.startswith(b"a b.png,7,")
    assert encode_result(_azure_frame(), {}, False)[1] == ""


def test_attempt_json_is_an_outcome() -> None:
    """The worker's done outcome reads back as prsd.wire.records.Outcome, field for field."""
    attempt = Attempt(
        42,
        status="succeeded",
        items=3,
        succeeded_items=2,
        failed_items=1,
        offset=10,
        length=20,
        process_name="process001",
        pid=123,
        start_time="2026-07-01T12:00:00.000Z",
        elapsed_s=1.5,
        process_time_s=1.25,
        run_method_s=1.0,
        header="a b\n",
        extra={"warning": "w"},
    )
    obj = attempt.to_json()
    outcome = Outcome.from_json(obj)
    assert outcome.to_json() == obj
    assert set(obj) <= set(Outcome.__dataclass_fields__)


def test_failed_attempt_json_keeps_index_and_status() -> None:
    """Empty fields are left out, as Outcome.to_json does; index and status stay."""
    obj = Attempt(0, error="ValueError: x").to_json()
    assert obj == {"index": 0, "status": "failed", "error": "ValueError: x"}
    assert Outcome.from_json(obj) == Outcome(0, "failed", error="ValueError: x")


def test_attempt_json_has_the_outcome_json_bytes() -> None:
    """The journal's text (and the done frame) is the outcome's JSON, key for key in its
    order, though the attempt makes it without building the outcome."""
    attempt = Attempt(7, items=2, process_name="process000", pid=9, start_time="t")
    attempt.succeeded_items, attempt.elapsed_s, attempt.status = 2, 0.5, "succeeded"
    attempt.extra = {"warning": "w"}
    assert list(attempt.to_json().items()) == list(attempt.outcome().to_json().items())
    bare = Attempt(3)
    assert list(bare.to_json().items()) == list(bare.outcome().to_json().items())
