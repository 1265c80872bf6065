"""An MLTable's transformations read into steps: the forms Azure writes, and refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from prsd.errors import JobSpecError
from prsd.jobspec.mlsteps import read_step
from prsd.jobspec.yamlsafe import Doc, Site

SITE = Site(Doc(Path("/t/MLTable"), {}, {}), "transformations[1]")


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("drop_columns", "c", {"columns": ["c"]}),
        ("keep_columns", ["a", "b"], {"columns": ["a", "b"]}),
        ("keep_columns", {"columns": ["a"]}, {"columns": ["a"]}),
        ("take", 5, {"count": 5}),
        ("skip", "2", {"count": 2}),
        ("filter", 'col("age") >= 18', {"column": "age", "cmp": ">=", "value": 18}),
        ("filter", "col('c') == 'Paris'", {"column": "c", "cmp": "==", "value": "Paris"}),
        ("filter", 'col("x") != null', {"column": "x", "cmp": "!=", "value": None}),
        ("filter", 'col("ok") == true', {"column": "ok", "cmp": "==", "value": True}),
        (
            "extract_columns_from_partition_format",
            {"partition_format": "{y}/x.csv", "path_column": "Path", "ignore_errors": False},
            {"format": "{y}/x.csv", "ignore_errors": False},
        ),
        (
            "convert_column_types",
            [{"columns": "a", "column_type": "float"}],
            {"conversions": [{"columns": ["a"], "type": "float"}]},
        ),
    ],
)
def test_forms_azure_writes(name: str, args: Any, expected: dict[str, Any]) -> None:
    """Each accepted form becomes a plain, JSON-ready step."""
    assert read_step(name, args, SITE, "/t/MLTable") == {**expected, "op": name}


@pytest.mark.parametrize(
    ("name", "args", "fragment"),
    [
        ("random_split", {"percent": 0.5}, "transformation random_split in /t/MLTable"),
        ("filter", 'col("a") > 1 and col("b") < 2', "one comparison"),
        ("filter", 'col("a") > b', "one comparison"),
        ("take", -1, "take"),
        ("drop_columns", [1, 2], "a column name"),
        ("convert_column_types", [{"columns": "a", "column_type": "decimal"}], "simple types"),
        ("extract_columns_from_partition_format", {"partition_format": "a/b.csv"}, "names no"),
    ],
)
def test_refusals_name_the_transformation_and_the_file(name: str, args: Any, fragment: str) -> None:
    """Nothing prsd cannot apply is skipped: an error naming it."""
    with pytest.raises(JobSpecError, match="MLTable") as caught:
        read_step(name, args, SITE, "/t/MLTable")
    assert fragment in str(caught.value), str(caught.value)
