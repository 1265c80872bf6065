"""Planning CSV and JSON-lines inputs: byte ranges of about ``mini_batch_size`` each.

A mini-batch's payload names a byte range of one file (never two), cut on a record
end, plus where its CSV header is: the worker reads the header bytes and the range
and parses them together, so every piece has the header. Nothing of the data travels
in a task file. Memory is one read block; the first mini-batch is yielded as soon as
its range is known.

Payload (JSON)::

    {"path": FILE, "start": BYTE, "end": BYTE, "line": FIRST_LINE,
     "head": [HEADER_FILE, HEADER_BYTES] | null}

``line`` is the 1-based physical line of the range's first byte (CSV), so a parse
error can name the line in the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prsd.inputsplit.tabular.cutter import RecordCutter
from prsd.inputsplit.tabular.inputfile import open_input

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

NO_HEADER = "no_header"
FROM_FIRST_FILE = "from_first_file"
_BLANK_CHECK_BYTES = 256


@dataclass(frozen=True)
class TextFormat:
    """How to cut one kind of text table.

    Attributes:
        csv: True for CSV (quotes and a header), False for JSON lines.
        header: MLTable's header mode (``all_files_same_headers``, ``no_header``, ...).
    """

    csv: bool
    header: str = "all_files_same_headers"

    @property
    def has_header(self) -> bool:
        return self.csv and self.header != NO_HEADER


def plan_text_files(paths: Iterable[str], size_bytes: int, fmt: TextFormat) -> Iterator[Any]:
    """Payloads of every file in turn (in input order), each about ``size_bytes``."""
    shared_head: list[Any] | None = None
    for path in paths:
        fd = open_input(path)
        try:
            read_at = _reader(fd)
            cutter = RecordCutter(read_at, quote=b'"' if fmt.csv else None, track_lines=fmt.csv)
            head: list[Any] | None = None
            if fmt.has_header:
                if fmt.header == FROM_FIRST_FILE and shared_head is not None:
                    head = shared_head
                else:
                    head = [path, cutter.cut(1)]
                    shared_head = head
            yield from _pieces(path, cutter, read_at, size_bytes, head)
        finally:
            os.close(fd)


def _pieces(
    path: str, cutter: RecordCutter, read_at: Any, size_bytes: int, head: list[Any] | None
) -> Iterator[dict[str, Any]]:
    start = cutter.offset
    while True:
        line = cutter.lines + 1
        end = cutter.cut(start + size_bytes)
        if end <= start:
            return
        if not _blank(read_at, start, end):
            yield {"path": path, "start": start, "end": end, "line": line, "head": head}
        start = end


def _blank(read_at: Any, start: int, end: int) -> bool:
    """True for a range holding only white space (blank lines at the end of a file)."""
    if end - start > _BLANK_CHECK_BYTES:
        return False
    return not bytes(read_at(start, end - start)).strip()


def _reader(fd: int) -> Any:
    def read_at(offset: int, size: int) -> bytes:
        return os.pread(fd, size, offset)

    return read_at
