"""The append_row file: every mini-batch's rows exactly once, in mini-batch order.

Invariant: the output is built in a hidden temp file beside its final name and
renamed into place only when the job completes, so it "appears complete or not at
all" (docs/spool.md, "Output"). Mini-batches are appended in index order as they become
final; one that finished early waits (as a byte range in its result file, not in
memory) until every earlier one is final. Payload bytes are copied from result
files without being parsed (``os.copy_file_range`` where the kernel offers it).

Only the current attempt's result of a mini-batch is ever offered (the ledger's
bookkeeping), so retries, requeues and duplicate commits cannot add rows twice.
A piece may cover a run of consecutive mini-batches (``count``): a task whose
mini-batches all succeeded wrote their bytes back to back in its result file, so
the whole task is one byte range, offered and copied as one (text output only; a
Parquet piece is one Arrow stream, one mini-batch).
A restarted leader rebuilds the file from the result files.

Root never touches the owner's files itself: the output folder is reached, made,
and the temp file created in it ``O_EXCL | O_NOFOLLOW`` by the job's owner side
(:mod:`prsd.asowner.side`: a process with the owner's ids when the daemon is root),
from the anchor prsd/leader/intake/outplace.py chooses, one folder at a time without
following a link. The leader writes the merged bytes through the descriptor it is
handed; the owner side renames the file into place relative to the folder's
descriptor, only if the output's path still leads there. So the kernel decides,
with the owner's rights, where an output may be made or replaced. Result bytes are
copied only from the very file whose metadata the leader read
(prsd/spool/resultfiles.py).

``append_row_format: parquet`` (an extension beyond Azure): each piece is an Arrow IPC
stream (``prsd.worker.results.arrow_rows``); the pieces go, in the same order, into
one Parquet file, one piece at a time (memory: the largest mini-batch result). The
first piece with rows fixes the schema; a later one is cast to it, and one that
cannot be cast fails the job with both schemas in the message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prsd.asowner.side import InProcess, OwnerSide, OwnerSideGone, owner_side
from prsd.errors import PrsdError
from prsd.fdio import write_all
from prsd.leader.intake.outplace import OutputPlace, output_place
from prsd.logconfig import get_logger
from prsd.spool.atomic import tmp_path_for
from prsd.spool.dirfd import check_owner
from prsd.spool.jobowner import owner
from prsd.spool.resultfiles import UntrustedResult, open_result

if TYPE_CHECKING:
    from prsd.jobspec import JobSpec
    from prsd.spool.layout import JobLayout

_COPY_CHUNK = 1 << 24
log = get_logger(__name__)


@dataclass(frozen=True)
class Piece:
    """Where a final mini-batch's append_row bytes are (None source: nothing to add).

    ``ident`` is the (device, inode) the leader read the result's metadata from: the
    bytes are copied only from that same file (None: any regular file, no link).
    ``as_owner``: the file is opened by the job owner's side (a kept result of an
    earlier job), not by the daemon. ``count``: the consecutive mini-batches the
    byte range holds, from the index it is offered at (text output only).
    """

    source: Path | None
    offset: int = 0
    length: int = 0
    header: str = ""
    ident: tuple[int, int] | None = None
    as_owner: bool = False
    count: int = 1


class OrderedMerge:
    """Appends final mini-batches' bytes to the output in index order.

    The output folder is opened on first use through ``place`` (see
    :mod:`prsd.leader.intake.outplace`; default: the output's folder as named), the temp
    file is created in it with ``O_CREAT | O_EXCL | O_NOFOLLOW`` and renamed into
    place relative to the same descriptor, after checking that the path still leads
    to that folder; all three by ``side``, the job owner's side (default: this
    process). The merge ends ``side`` when it finishes or is abandoned.
    """

    def __init__(
        self,
        out_path: Path,
        *,
        write_header: bool = False,
        fmt: str = "text",
        place: OutputPlace | None = None,
        side: OwnerSide | None = None,
    ) -> None:
        self.out_path = out_path
        self._place = place
        self.side = side or InProcess()
        self._parquet = ParquetSink() if fmt == "parquet" else None
        self._tmp_name = tmp_path_for(out_path).name
        self._dir_fd = -1
        self._fd = -1
        self._write_header = write_header
        self._header_written = False
        self._waiting: dict[int, Piece] = {}
        self._inside: set[int] = set()  # indices inside a waiting piece, past its first
        self.next_index = 0
        self.bytes_written = 0
        self._src_path: Path | None = None
        self._src_fd = -1
        self.left_out: list[int] = []  # indices whose bytes could not be appended
        self.broken = False  # a Parquet piece failed midway: no partial output

    def offer(self, index: int, piece: Piece) -> None:
        """Hand over mini-batch ``index`` (final); appends it and any that were waiting.

        Raises:
            OwnerOpError: the owner side refused the output folder or file (a link on
                the way, someone else's folder, the kernel's EACCES...).
            OwnerSideGone: the owner-side process died or hung.
            UnsafeFolder: the output folder is not the owner's (a non-root daemon).
            UntrustedResult: a result file is a link or not the file read before.
        """
        if piece.count > 1 and self._parquet is not None:
            raise ValueError("a Parquet output takes one mini-batch per piece")
        covers = range(index, index + max(piece.count, 1))
        if (
            index < self.next_index
            or index in self._inside
            or any(i in self._waiting for i in covers)
        ):
            raise ValueError(f"mini-batch {index} offered twice to the merge")
        self._waiting[index] = piece
        self._inside.update(covers[1:])
        self.drain()

    def drain(self) -> None:
        """Append every waiting piece whose turn it is.

        A piece that cannot be appended (its result file replaced or gone) is left
        out whole: the output is cut back to where it was, the piece's indices are noted
        in :attr:`left_out` and passed, and the error is raised. A later call goes on
        with the next index, so a failed job's partial output keeps every other row.

        Raises:
            See :meth:`offer`.
        """
        while self.next_index in self._waiting:
            piece = self._waiting.pop(self.next_index)
            index = self.next_index
            self.next_index += max(piece.count, 1)
            self._inside.difference_update(range(index + 1, self.next_index))
            mark = self._mark()
            try:
                self._append(piece)
            except Exception:
                self._cut_back(range(index, self.next_index), mark)
                raise

    @property
    def takes_runs(self) -> bool:
        """Whether a piece may cover several mini-batches (text output)."""
        return self._parquet is None

    @property
    def place(self) -> OutputPlace | None:
        return self._place

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def _mark(self) -> tuple[int, int, bool]:
        at = os.lseek(self._fd, 0, os.SEEK_CUR) if self._fd >= 0 else 0
        return at, self.bytes_written, self._header_written

    def _cut_back(self, indices: range, mark: tuple[int, int, bool]) -> None:
        """Undo a piece's partial append (text output; Parquet cannot be cut back)."""
        self.left_out.extend(indices)
        self._close_source()
        if self._parquet is not None:
            self.broken = True
            return
        at, self.bytes_written, self._header_written = mark
        if self._fd >= 0:
            os.ftruncate(self._fd, at)
            os.lseek(self._fd, at, os.SEEK_SET)

    def _open(self) -> None:
        if self._fd >= 0:
            return
        if self._place is None:  # no job to act for: the folder as named, made if missing
            self.out_path.parent.mkdir(parents=True, exist_ok=True)
        place = self._where()
        anchor = str(place.anchor)
        self._dir_fd, self._fd = self.side.open_output(
            anchor, place.parts, self._tmp_name, create=True
        )
        try:
            if place.folder_uids:
                check_owner(self._dir_fd, self.out_path.parent, place.folder_uids)
        except BaseException:
            self.abandon()
            raise

    def _where(self) -> OutputPlace:
        return self._place or OutputPlace(self.out_path.parent)

    def _append(self, piece: Piece) -> None:
        if piece.source is None or piece.length == 0:
            return
        self._open()
        if self._write_header and not self._header_written and piece.header:
            self._write_all(piece.header.encode())
            self._header_written = True
        src = self._source_fd(piece)
        if self._parquet is not None:
            data = os.pread(src, piece.length, piece.offset)
            self._parquet.add(data, self._fd, piece.source)
            return
        self._copy(src, piece.offset, piece.length)

    def _source_fd(self, piece: Piece) -> int:
        path = piece.source
        assert path is not None
        if path != self._src_path:
            self._close_source()
            if piece.as_owner:
                fd: int | None = self.side.open_read(str(path))
            else:
                fd = open_result(path, piece.ident)
            if fd is None:
                raise UntrustedResult(f"result file {path} is gone; the output cannot be built")
            self._src_fd, self._src_path = fd, path
        return self._src_fd

    def _close_source(self) -> None:
        if self._src_fd >= 0:
            os.close(self._src_fd)
        self._src_fd = -1
        self._src_path = None

    def _copy(self, src: int, offset: int, length: int) -> None:
        remaining = length
        while remaining:
            n = min(remaining, _COPY_CHUNK)
            try:
                copied = os.copy_file_range(src, self._fd, n, offset)
            except OSError:
                copied = self._write_all(os.pread(src, n, offset))
            if copied <= 0:
                raise OSError(f"short copy from result file at offset {offset}")
            offset += copied
            remaining -= copied
            self.bytes_written += copied

    def _write_all(self, data: bytes) -> int:
        return write_all(self._fd, data)

    def finish(self, *, durable: bool = True) -> Path:
        """Publish the output under its final name; every mini-batch must be in.

        Raises:
            OwnerOpError: the output's path no longer leads to the folder the output
                was built in (replaced by a link), or the owner may not write there.
            OwnerSideGone: the owner-side process died or hung.
        """
        if self._waiting:
            raise ValueError(f"{len(self._waiting)} mini-batches still wait for earlier ones")
        self._open()
        self._close_source()
        if self._parquet is not None:
            self._parquet.close(self._fd)
        if durable:
            os.fsync(self._fd)
        os.close(self._fd)
        self._fd = -1
        place = self._where()
        try:
            self.side.publish(
                self._dir_fd, str(place.anchor), place.parts, self._tmp_name,
                self.out_path.name, durable=durable,
            )  # fmt: skip
        except BaseException:
            self.abandon()
            raise
        os.close(self._dir_fd)
        self._dir_fd = -1
        self.side.close()
        return self.out_path

    def abandon(self) -> None:
        """Drop the temp output (job failed or canceled: no partial output appears)."""
        self._close_source()
        if self._parquet is not None:
            self._parquet.close(None)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._dir_fd >= 0:
            try:
                self._discard()
            except PrsdError as exc:  # the job ends anyway: say what is left behind
                log.warning("temp output not removed", path=str(self.out_path), error=str(exc))
            os.close(self._dir_fd)
            self._dir_fd = -1
        self.side.close()

    def _discard(self) -> None:
        """Remove the temp file; once more with a fresh owner side if it had died."""
        try:
            self.side.discard(self._dir_fd, self._tmp_name)
        except OwnerSideGone:
            self.side.revive()
            self.side.discard(self._dir_fd, self._tmp_name)


class OutputSchemaError(PrsdError):
    """A mini-batch's result does not fit the Parquet output's schema."""


class ParquetSink:
    """The Parquet output: Arrow IPC pieces appended as row groups, in order."""

    def __init__(self) -> None:
        self._writer: Any = None
        self._schema: Any = None
        self.rows = 0

    def add(self, data: bytes, fd: int, source: Path) -> None:
        """Append one piece (an Arrow IPC stream); empty results add nothing.

        Raises:
            OutputSchemaError: its columns cannot be cast to the output's schema.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        with pa.ipc.open_stream(pa.BufferReader(data)) as reader:
            table = reader.read_all()
        if table.num_rows == 0:
            return
        if self._writer is None:
            self._writer = pq.ParquetWriter(_sink(fd), table.schema)
            self._schema = table.schema
        schema = self._schema
        if not table.schema.equals(schema):
            try:
                table = table.select(schema.names).cast(schema)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, KeyError) as exc:
                raise OutputSchemaError(
                    f"append_row_format parquet: a result in {source.name} has columns "
                    f"{table.schema.to_string(show_schema_metadata=False)!r}, unlike the "
                    f"first result's {schema.to_string(show_schema_metadata=False)!r}: {exc}"
                ) from exc
        self._writer.write_table(table)
        self.rows += table.num_rows

    def close(self, fd: int | None) -> None:
        """Finish the file (a valid empty Parquet file when no result had rows)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self._writer is not None:
            self._writer.close()
            self._writer = None
        elif fd is not None:
            pq.write_table(pa.table({}), _sink(fd))


def _sink(fd: int) -> Any:
    """A writable file on ``fd`` that Arrow writes to (the descriptor stays ours)."""
    return open(fd, "wb", buffering=0, closefd=False)  # unbuffered: nothing left to flush


def open_merge(spec: JobSpec, layout: JobLayout) -> OrderedMerge | None:
    """The merge of a job's append_row file (None: the job writes no such file)."""
    if spec.output_action != "append_row" or not spec.append_row_to:
        return None
    out = Path(spec.append_row_to)
    place = output_place(layout, out)
    who = owner(layout)  # output_place refused a job without a record already
    return OrderedMerge(
        out,
        write_header=spec.append_row_dataframe_header,
        fmt=spec.append_row_format,
        place=place,
        side=owner_side(who.uid, who.gid),
    )
