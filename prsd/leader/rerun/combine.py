"""A completed retry's whole output: the kept results and its own, in the retry's order.

Promise: :func:`combine_outputs` publishes one output file holding, for each unit of
``retry_order.json`` (:mod:`prsd.leader.rerun.retryjob`), the bytes of the kept result or of
the retry's own succeeded mini-batch, in order, made by the job owner's side as the
job's own merge would be (:mod:`prsd.leader.run.merge`).

Errors: ``PrsdError`` when the order file or a kept result cannot be used, the retry
files are not the daemons', or the owner side refused or failed; ``OSError`` when a
kept result file cannot be read. Nothing is published then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prsd.leader.rerun.retryjob import read_order
from prsd.leader.run.merge import OrderedMerge, Piece
from prsd.retryplan.kept import check_same_owner, is_probe, read_kept
from prsd.spool.jobfolder import JobFolder
from prsd.spool.layout import parse_done_name
from prsd.wire.records import SUCCEEDED

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.asowner.side import OwnerSide
    from prsd.leader.intake.outplace import OutputPlace
    from prsd.retryplan.kept import KeptResult
    from prsd.spool.jobfolder import JobFiles
    from prsd.spool.layout import JobLayout


def own_pieces(folder: JobFiles) -> dict[int, Piece]:
    """Where each of the job's own succeeded mini-batches' bytes are (probes left out)."""
    pieces: dict[int, Piece] = {}
    for shard in folder.done_shards():
        for name in folder.done_names(shard):
            parsed = parse_done_name(name)
            if parsed is None or is_probe(parsed[0]):
                continue
            found = folder.read_result(*parsed)
            path = folder.layout.result(*parsed)
            for o in found.meta.outcomes if found is not None else ():
                if o.status == SUCCEEDED:
                    pieces[o.index] = Piece(path, o.offset, o.length, o.header)
    return pieces


def combine_outputs(
    layout: JobLayout,
    out_path: Path,
    *,
    write_header: bool,
    fmt: str = "text",
    place: OutputPlace | None = None,
    side: OwnerSide | None = None,
) -> Path:
    """Build and publish a completed retry's whole output: kept results and its own.

    The output is made by the job owner's ``side`` in ``place`` (as the job's own
    merge would: :mod:`prsd.leader.run.merge`), and a kept result is opened by that side
    too, so the kernel refuses any file the owner could not read. Who owns every job
    a kept result comes from is checked again here, at use.

    Raises:
        PrsdError: the order file or a kept result cannot be used, the retry files
            are not the daemons', or the owner side refused or failed.
        OSError: a kept result file cannot be read.
    """
    merge = OrderedMerge(out_path, write_header=write_header, fmt=fmt, place=place, side=side)
    try:
        order = read_order(layout)
        kept = read_kept(layout.root)
        check_same_owner(layout, {k.job for k in kept})
        new = own_pieces(JobFolder.of(layout))
        for i, unit in enumerate(order.units):
            piece = _kept_piece(kept[-1 - unit], layout.root.parent) if unit < 0 else new.get(unit)
            merge.offer(i, piece or Piece(None))
        return merge.finish()
    except BaseException:
        merge.abandon()
        raise


def _kept_piece(k: KeptResult, jobs_root: Path) -> Piece:
    """A kept result's bytes, opened by the job owner's side (``as_owner``).

    Raises:
        PrsdError: the entry names anything but a result file of its job.
    """
    return Piece(k.result_path(jobs_root), k.offset, k.length, k.header, as_owner=True)
