"""Cutting CSV and JSON-lines bytes on record ends (pure, no files)."""

from __future__ import annotations

import csv
import io

import pytest

from prsd.inputsplit.tabular.cutter import RecordCutter, bytes_reader

QUOTED = b'id,text,n\n1,"two\nlines",3\n2,plain,4\n3,"say ""hi""\nand\nmore",5\n4,"a,b",6\n5,last,7'


def _cuts(data: bytes, start: int, size: int, *, block: int, quote: bytes | None) -> list[int]:
    cutter = RecordCutter(bytes_reader(data), quote=quote, track_lines=True, block_bytes=block)
    cutter.cut(start)
    ends: list[int] = []
    pos = start
    while True:
        end = cutter.cut(pos + size)
        if end <= pos:
            return ends
        ends.append(end)
        pos = end


def _records(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode())))


@pytest.mark.parametrize("block", [1, 3, 7, 64, 4096])
@pytest.mark.parametrize("size", [1, 5, 17, 40, 1000])
def test_csv_cuts_never_split_a_quoted_field(block: int, size: int) -> None:
    """Every piece is whole records, quoted newlines included, whatever the read block."""
    header_end = RecordCutter(bytes_reader(QUOTED), block_bytes=block).cut(1)
    assert QUOTED[:header_end] == b"id,text,n\n"
    ends = _cuts(QUOTED, header_end, size, block=block, quote=b'"')
    assert ends[-1] == len(QUOTED)
    starts = [header_end, *ends[:-1]]
    rows = [r for s, e in zip(starts, ends, strict=True) for r in _records(QUOTED[s:e])]
    assert rows == _records(QUOTED)[1:]
    for s, e in zip(starts, ends, strict=True):
        assert e - s >= min(size, len(QUOTED) - s), "a piece is at least the size (or the rest)"


def test_a_row_larger_than_the_size_travels_alone() -> None:
    """A 100-byte row with a 10-byte size is one piece, not cut inside."""
    data = b"a\n" + b"x" * 100 + b"\nb\nc\n"
    ends = _cuts(data, 2, 10, block=8, quote=b'"')
    assert [data[s:e] for s, e in zip([2, *ends[:-1]], ends, strict=True)] == [
        b"x" * 100 + b"\n",
        b"b\nc\n",
    ]


def test_line_numbers_count_physical_lines() -> None:
    """``lines`` counts every newline consumed, quoted ones too (editors' line numbers)."""
    cutter = RecordCutter(bytes_reader(QUOTED), block_bytes=5)
    cutter.cut(1)
    assert cutter.lines == 1
    cutter.cut(cutter.offset + 1)  # record 1 spans lines 2-3
    assert cutter.lines == 3


def test_jsonl_cuts_jump_without_reading_everything() -> None:
    """Without quotes or line tracking, only the bytes around each target are read."""
    lines = [b'{"i": %d, "s": "a\\nb"}\n' % i for i in range(1000)]
    data = b"".join(lines)
    reads: list[tuple[int, int]] = []

    def read_at(offset: int, size: int) -> bytes:
        reads.append((offset, size))
        return data[offset : offset + size]

    cutter = RecordCutter(read_at, quote=None, track_lines=False, block_bytes=64)
    ends: list[int] = []
    pos = 0
    while (end := cutter.cut(pos + 5000)) > pos:
        ends.append(end)
        pos = end
    assert all(data[e - 1 : e] == b"\n" for e in ends)
    assert b"".join(data[s:e] for s, e in zip([0, *ends[:-1]], ends, strict=True)) == data
    assert sum(size for _, size in reads) < len(data) / 4


def test_no_trailing_newline_and_blank_tail() -> None:
    """The last record may lack a newline; an empty input gives no piece."""
    assert _cuts(b"a\n1\n2", 2, 1, block=2, quote=b'"') == [4, 5]
    assert _cuts(b"", 0, 10, block=2, quote=b'"') == []


def test_first_cut_reads_one_block_of_a_large_csv() -> None:
    """Streaming: the first mini-batch's end is known after one read block, not the file."""
    data = b"a,b\n" + b"1,2\n" * 2_500_000  # 10 MB
    read: list[int] = []

    def read_at(offset: int, size: int) -> bytes:
        read.append(size)
        return data[offset : offset + size]

    cutter = RecordCutter(read_at, block_bytes=64 * 1024)
    cutter.cut(1)
    assert cutter.cut(cutter.offset + 1024) == 4 + 1024
    assert sum(read) == 64 * 1024
