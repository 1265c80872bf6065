"""Finding record ends in CSV and JSON-lines bytes: where a mini-batch may be cut.

A record ends at a newline that is not inside a quoted field. Whether a newline is
quoted depends on every quote character before it, so a CSV file is scanned from its
start, sequentially, keeping only the parity of the quotes seen (an escaped quote
``""`` counts twice and leaves the parity unchanged). JSON lines cannot hold a raw
newline inside a value, so without a quote character the cutter jumps straight to
each target offset and reads only around it.

Limit: a quote character inside an *unquoted* field (``5" screen``) flips the parity
as if it opened a quoted field. pandas reads such a field literally, so such a file
is cut at the wrong places; CSV writers quote these fields, and prsd documents it.

Pure: the bytes come from a ``read_at(offset, size)`` callable, no file is opened here.
"""

from __future__ import annotations

from collections.abc import Callable

ReadAt = Callable[[int, int], bytes]

BLOCK_BYTES = 4 * 1024 * 1024
_NEWLINE = b"\n"


class RecordCutter:
    """Walks forward through one file, returning record ends at or after given offsets.

    Attributes:
        lines: newlines before :attr:`offset` (tracked when ``track_lines``).
    """

    def __init__(
        self,
        read_at: ReadAt,
        *,
        quote: bytes | None = b'"',
        track_lines: bool = True,
        block_bytes: int = BLOCK_BYTES,
    ) -> None:
        self._read_at = read_at
        self._quote = quote
        self._sequential = quote is not None or track_lines
        self._track_lines = track_lines
        self._block = block_bytes
        self._buf = b""
        self._buf_off = 0  # file offset of _buf[0]
        self._cur = 0  # position in _buf: everything before it is consumed
        self._odd = False  # quote parity at _cur
        self._eof = False
        self.lines = 0

    @property
    def offset(self) -> int:
        """File offset of the first byte not yet consumed."""
        return self._buf_off + self._cur

    def cut(self, min_end: int) -> int:
        """Consume up to the end of the record holding byte ``min_end - 1``.

        Returns the offset just past the first unquoted newline at or after
        ``min_end - 1`` (and after :attr:`offset`), or the end of the data. A record
        longer than the step is never split: the cut moves on to its end.
        """
        self._advance_to(max(min_end - 1, self.offset))
        while True:
            nl = self._buf.find(_NEWLINE, self._cur)
            if nl < 0:
                self._consume(len(self._buf))
                if not self._fill():
                    return self.offset
                continue
            self._consume(nl + 1)
            if not self._odd:
                return self.offset

    def _advance_to(self, pos: int) -> None:
        if not self._sequential and pos > self._buf_off + len(self._buf):
            chunk = self._read_at(pos, self._block)
            if chunk:  # else the data ends before pos: walk to its end below
                self._buf, self._buf_off, self._cur = chunk, pos, 0
                return
        while pos > self._buf_off + len(self._buf):
            self._consume(len(self._buf))
            if not self._fill():
                return
        self._consume(pos - self._buf_off)

    def _consume(self, upto: int) -> None:
        if upto <= self._cur:
            return
        if self._quote is not None and self._buf.count(self._quote, self._cur, upto) & 1:
            self._odd = not self._odd
        if self._track_lines:
            self.lines += self._buf.count(_NEWLINE, self._cur, upto)
        self._cur = upto

    def _fill(self) -> bool:
        if self._eof:
            return False
        start = self._buf_off + len(self._buf)
        chunk = self._read_at(start, self._block)
        if not chunk:
            self._eof = True
            return False
        self._buf, self._buf_off = self._buf[self._cur :] + chunk, self._buf_off + self._cur
        self._cur = 0
        return True


def bytes_reader(data: bytes) -> ReadAt:
    """A ``read_at`` over bytes in memory (tests, small headers)."""

    def read_at(offset: int, size: int) -> bytes:
        return data[offset : offset + size]

    return read_at
