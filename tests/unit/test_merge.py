"""The ordered merge: real files, mini-batch order, exactly once, complete or absent."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from prsd.leader.run.merge import OrderedMerge, Piece
from prsd.spool.resultfiles import UntrustedResult

if TYPE_CHECKING:
    from pathlib import Path


def _source(tmp_path: Path, name: str, chunks: list[bytes]) -> list[Piece]:
    path = tmp_path / name
    path.write_bytes(b"".join(chunks) + b"TRAILER")
    pieces, off = [], 0
    for c in chunks:
        pieces.append(Piece(path, off, len(c)))
        off += len(c)
    return pieces


def test_out_of_order_offers_come_out_in_order(tmp_path: Path) -> None:
    """Mini-batches offered in any order are written in index order."""
    a = _source(tmp_path, "a.res", [b"0\n", b"1\n"])
    b = _source(tmp_path, "b.res", [b"2\n", b"3\n"])
    out = tmp_path / "out" / "result.txt"
    merge = OrderedMerge(out)
    merge.offer(3, b[1])
    merge.offer(2, b[0])
    assert merge.waiting == 2
    assert not out.exists()
    merge.offer(0, a[0])
    merge.offer(1, a[1])
    assert merge.finish() == out
    assert out.read_bytes() == b"0\n1\n2\n3\n"
    assert [p.name for p in out.parent.iterdir()] == ["result.txt"]


def test_failed_mini_batches_add_nothing(tmp_path: Path) -> None:
    """A failed mini-batch (no source) is skipped without holding up the rest."""
    a = _source(tmp_path, "a.res", [b"x\n", b"z\n"])
    out = tmp_path / "o.txt"
    merge = OrderedMerge(out)
    merge.offer(1, Piece(None))
    merge.offer(2, a[1])
    merge.offer(0, a[0])
    merge.finish()
    assert out.read_bytes() == b"x\nz\n"


def test_header_written_once_first(tmp_path: Path) -> None:
    """With a DataFrame header, it is written once before the first rows."""
    path = tmp_path / "a.res"
    path.write_bytes(b"1 2\n3 4\n")
    out = tmp_path / "o.txt"
    merge = OrderedMerge(out, write_header=True)
    merge.offer(0, Piece(path, 0, 4, "a b\n"))
    merge.offer(1, Piece(path, 4, 4, "a b\n"))
    merge.finish()
    assert out.read_bytes() == b"a b\n1 2\n3 4\n"


def test_double_offer_refused(tmp_path: Path) -> None:
    """Offering a mini-batch twice is a bug the merge refuses."""
    merge = OrderedMerge(tmp_path / "o.txt")
    merge.offer(0, Piece(None))
    with pytest.raises(ValueError, match="twice"):
        merge.offer(0, Piece(None))
    merge.abandon()


def test_abandon_leaves_nothing(tmp_path: Path) -> None:
    """A failed job leaves no output and no temp file."""
    out = tmp_path / "o.txt"
    merge = OrderedMerge(out)
    merge.offer(1, Piece(None))
    merge.abandon()
    assert list(tmp_path.iterdir()) == []


def test_finish_with_gap_refused(tmp_path: Path) -> None:
    """The output is never published while an earlier mini-batch is missing."""
    merge = OrderedMerge(tmp_path / "o.txt")
    merge.offer(1, Piece(None))
    with pytest.raises(ValueError, match="wait"):
        merge.finish()
    merge.abandon()


def test_a_replaced_result_is_left_out_and_the_rest_goes_on(tmp_path: Path) -> None:
    """A result file replaced after the leader read it (two writers of one path) fails
    its own piece only: the merge passes it, and the rows after it are still appended."""
    a = _source(tmp_path, "a.res", [b"0\n"])[0]
    b_path = tmp_path / "b.res"
    b_path.write_bytes(b"1\n")
    st = b_path.stat()
    b = Piece(b_path, 0, 2, ident=(st.st_dev, st.st_ino))
    c = _source(tmp_path, "c.res", [b"2\n"])[0]
    (tmp_path / "b.new").write_bytes(b"X\n")
    (tmp_path / "b.new").replace(b_path)  # another inode under the name read before
    merge = OrderedMerge(tmp_path / "o.txt")
    merge.offer(0, a)
    merge.offer(2, c)
    with pytest.raises(UntrustedResult, match="replaced after the leader read it"):
        merge.offer(1, b)
    assert merge.left_out == [1]
    merge.drain()
    assert merge.finish().read_bytes() == b"0\n2\n"


def test_a_run_piece_covers_its_mini_batches_in_order(tmp_path: Path) -> None:
    """One piece for a task's mini-batches 1-3 (one byte range) takes their place."""
    a = _source(tmp_path, "a.res", [b"0\n"])[0]
    run_path = tmp_path / "run.res"
    run_path.write_bytes(b"1\n2\n3\nTRAILER")
    d = _source(tmp_path, "d.res", [b"4\n"])[0]
    merge = OrderedMerge(tmp_path / "o.txt")
    merge.offer(4, d)
    merge.offer(1, Piece(run_path, 0, 6, count=3))
    with pytest.raises(ValueError, match="offered twice"):
        merge.offer(2, d)  # inside the waiting run
    with pytest.raises(ValueError, match="offered twice"):
        merge.offer(0, Piece(run_path, 0, 4, count=2))  # reaches into the run
    merge.offer(0, a)
    assert merge.next_index == 5 and merge.waiting == 0
    assert merge.finish().read_bytes() == b"0\n1\n2\n3\n4\n"


def test_a_run_piece_that_cannot_be_read_leaves_out_all_its_mini_batches(
    tmp_path: Path,
) -> None:
    a = _source(tmp_path, "a.res", [b"0\n"])[0]
    gone = Piece(tmp_path / "gone.res", 0, 4, count=2)
    merge = OrderedMerge(tmp_path / "o.txt")
    merge.offer(0, a)
    with pytest.raises(UntrustedResult, match="is gone"):
        merge.offer(1, gone)
    assert merge.left_out == [1, 2] and merge.next_index == 3
    assert merge.finish().read_bytes() == b"0\n"


def test_a_parquet_output_takes_no_run_piece(tmp_path: Path) -> None:
    merge = OrderedMerge(tmp_path / "o.parquet", fmt="parquet")
    assert not merge.takes_runs and OrderedMerge(tmp_path / "o.txt").takes_runs
    with pytest.raises(ValueError, match="one mini-batch per piece"):
        merge.offer(0, Piece(tmp_path / "r.res", 0, 4, count=2))
    merge.abandon()
