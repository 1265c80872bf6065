"""Planning real table files: payloads hold byte ranges and row groups, never data."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prsd.errors import InputError
from prsd.inputsplit.tabular.groups import plan_partitioned_table
from prsd.inputsplit.tabular.parquet import plan_parquet_files
from prsd.inputsplit.tabular.readers import TableSource
from prsd.inputsplit.tabular.text import TextFormat, plan_text_files

if TYPE_CHECKING:
    from pathlib import Path


def _read_piece(payload: dict[str, object]) -> pd.DataFrame:
    head = payload["head"]
    header = b""
    if isinstance(head, list):
        with open(head[0], "rb") as f:
            header = f.read(head[1])
    with open(str(payload["path"]), "rb") as f:
        start, end = int(str(payload["start"])), int(str(payload["end"]))
        f.seek(start)
        data = f.read(end - start)
    return pd.read_csv(io.BytesIO(header + data), dtype=str, keep_default_na=False)


def test_header_only_empty_and_quoted_files(tmp_path: Path) -> None:
    """Header-only and empty files give no mini-batch; every piece has the header."""
    (tmp_path / "a.csv").write_bytes(b'k,v\n1,"x\ny"\n2,z\n3,"q,""r"""\n4,w\n')
    (tmp_path / "b.csv").write_bytes(b"k,v\n")
    (tmp_path / "c.csv").write_bytes(b"")
    (tmp_path / "d.csv").write_bytes(b"k,v\n5,last")
    files = [str(tmp_path / n) for n in ("a.csv", "b.csv", "c.csv", "d.csv")]
    payloads = list(plan_text_files(files, 6, TextFormat(csv=True)))
    assert {p["path"] for p in payloads} == {files[0], files[3]}
    pieces = [_read_piece(p) for p in payloads]
    assert all(list(piece.columns) == ["k", "v"] for piece in pieces)
    got = pd.concat(pieces, ignore_index=True)
    assert got.values.tolist() == [
        ["1", "x\ny"],
        ["2", "z"],
        ["3", 'q,"r"'],
        ["4", "w"],
        ["5", "last"],
    ]
    assert [p["line"] for p in payloads if p["path"] == files[0]][:2] == [2, 4]
    assert all(p["end"] - p["start"] < 20 for p in payloads), "a payload names bytes, holds none"


def test_header_from_first_file(tmp_path: Path) -> None:
    """``header: from_first_file``: later files are all data and use the first header."""
    (tmp_path / "a.csv").write_bytes(b"k,v\n1,a\n")
    (tmp_path / "b.csv").write_bytes(b"2,b\n3,c\n")
    files = [str(tmp_path / "a.csv"), str(tmp_path / "b.csv")]
    payloads = list(plan_text_files(files, 1000, TextFormat(csv=True, header="from_first_file")))
    assert [(p["path"], p["start"], p["head"]) for p in payloads] == [
        (files[0], 4, [files[0], 4]),
        (files[1], 0, [files[0], 4]),
    ]


def test_parquet_planning_reads_footers_only(tmp_path: Path) -> None:
    """Data pages overwritten with zeros: planning still works, reading the data does not."""
    path = tmp_path / "t.parquet"
    table = pa.table({"x": list(range(1000)), "s": [f"row {i}" for i in range(1000)]})
    pq.write_table(table, path, row_group_size=100, compression="none")
    expected = [(rg, 100) for rg in range(10)]
    raw = bytearray(path.read_bytes())
    footer = int.from_bytes(raw[-8:-4], "little") + 8
    raw[4 : len(raw) - footer] = bytes(len(raw) - footer - 4)
    path.write_bytes(bytes(raw))
    with pytest.raises(OSError):
        pq.read_table(path)
    planned = list(plan_parquet_files([str(path)], 1))
    assert [(p["row_groups"], rows) for p, rows in planned] == [([rg], n) for rg, n in expected]


def test_jsonl_groups_and_a_restart_reuses_them(tmp_path: Path) -> None:
    """JSON lines grouped across files into Parquet group files; planning again reads
    the recorded grouping instead of grouping anew."""
    (tmp_path / "a.jsonl").write_text(
        '{"k": 1, "v": "x"}\n{"k": 2, "v": "y"}\n{"k": null, "v": "z"}\n\n', encoding="utf-8"
    )
    (tmp_path / "b.jsonl").write_text('{"k": 2, "v": "w"}\n{"k": 1, "v": "u"}\n', "utf-8")
    files = [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]
    folder = tmp_path / "job" / "partitions"
    mbs = list(plan_partitioned_table(TableSource("jsonl"), files, ["k"], folder))
    got = [(mb.key, pq.read_table(mb.payload["path"]).column("v").to_pylist()) for mb in mbs]
    assert got == [({"k": "1"}, ["x", "u"]), ({"k": "2"}, ["y", "w"]), ({"k": None}, ["z"])]
    assert [mb.items for mb in mbs] == [2, 2, 1]
    marker = folder / "groups" / "kept"
    marker.write_bytes(b"")
    again = list(plan_partitioned_table(TableSource("jsonl"), files, ["k"], folder))
    assert again == mbs
    assert marker.exists(), "a finished grouping is reused, not redone"


def test_a_missing_key_column_names_the_file(tmp_path: Path) -> None:
    """A partition key that is not a column fails with the file and its columns."""
    (tmp_path / "a.csv").write_text("store,qty\n1,2\n", encoding="utf-8")
    with pytest.raises(
        InputError, match=r"'brand' is not a column of .*a\.csv \(columns: store, qty\)"
    ):
        list(
            plan_partitioned_table(
                TableSource("csv"), [str(tmp_path / "a.csv")], ["store", "brand"], tmp_path / "p"
            )
        )
