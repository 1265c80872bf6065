"""append_row_format parquet: Arrow pieces from workers into one Parquet file."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
import pyarrow.parquet as pq
import pytest

from prsd.leader.run.merge import OrderedMerge, OutputSchemaError, Piece
from prsd.worker.results import arrow_rows, encode_output

if TYPE_CHECKING:
    from pathlib import Path


def _pieces(tmp_path: Path, results: list[object]) -> list[Piece]:
    source = tmp_path / "task.res"
    pieces = []
    with open(source, "wb") as f:
        for result in results:
            data = arrow_rows(result)
            pieces.append(Piece(source, f.tell(), len(data)))
            f.write(data)
    return pieces


def test_pieces_become_one_parquet_file_in_order(tmp_path: Path) -> None:
    """Pieces offered out of order land in index order; an int column is cast to the
    first piece's float; an empty result adds nothing."""
    first = pd.DataFrame({"id": [0, 1], "score": [0.5, 1.5]})
    second = pd.DataFrame({"id": [2], "score": [3]})
    empty = pd.DataFrame({"id": pd.Series([], dtype="int64"), "score": pd.Series([], dtype=float)})
    pieces = _pieces(tmp_path, [first, second, empty])
    merge = OrderedMerge(tmp_path / "out.parquet", fmt="parquet")
    for index in (2, 1, 0):
        merge.offer(index, pieces[index])
    out = merge.finish(durable=False)
    got = pq.read_table(out).to_pandas()
    expected = pd.DataFrame({"id": [0, 1, 2], "score": [0.5, 1.5, 3.0]})
    pd.testing.assert_frame_equal(got, expected)


def test_a_result_that_cannot_be_cast_fails_clearly(tmp_path: Path) -> None:
    """Text where the first result had numbers: an error with both schemas."""
    pieces = _pieces(tmp_path, [pd.DataFrame({"x": [1]}), pd.DataFrame({"x": ["one"]})])
    merge = OrderedMerge(tmp_path / "out.parquet", fmt="parquet")
    merge.offer(0, pieces[0])
    with pytest.raises(OutputSchemaError, match="unlike the first result's"):
        merge.offer(1, pieces[1])
    merge.abandon()
    assert list(tmp_path.iterdir()) == [tmp_path / "task.res"]


def test_list_results_are_one_value_column() -> None:
    """A list result becomes a column ``value`` (text when Arrow cannot type it)."""
    import pyarrow as pa

    data, header = encode_output("parquet", [1, 2, 3], {}, want_header=True)
    assert header == ""
    with pa.ipc.open_stream(pa.BufferReader(data)) as reader:
        assert reader.read_all().to_pydict() == {"value": [1, 2, 3]}
    with pa.ipc.open_stream(pa.BufferReader(arrow_rows([1, "a"]))) as reader:
        assert reader.read_all().to_pydict() == {"value": ["1", "a"]}
