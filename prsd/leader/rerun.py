"""Retry jobs (``prsctl retry``): run only the mini-batches an earlier job did not finish well.

A retry job is an ordinary job folder with a ``retry.json`` beside its ``job.yaml``:
the earlier job's id, how many mini-batches it had, and the (ascending) indices to
run again. The leader plans the input exactly as before and keeps only those
mini-batches, renumbered from 0 (the ledger counts from 0); the split being
deterministic, mini-batch ``k`` of the retry is ``run[k]`` of the earlier job. If the
input no longer splits into the same number of mini-batches, the retry fails
rather than mix up rows.

When the retry completes, its append_row file is rebuilt from both jobs' result
files in the earlier job's mini-batch order: each mini-batch's rows from the
retry if it ran there, else from the earlier job. So the retry's output is the
whole job's output, every mini-batch once.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from prsd.errors import InputError
from prsd.leader.merge import OrderedMerge, Piece
from prsd.storage.layout import JobLayout, parse_done_name
from prsd.storage.records import SUCCEEDED, MiniBatch, read_result_meta

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

RETRY_FILE = "retry.json"


@dataclass(frozen=True)
class RetryPlan:
    of_job: str  # the earlier job's id (same spool)
    total_mbs: int  # mini-batches of the earlier job
    run: tuple[int, ...]  # the earlier job's indices to run again, ascending

    def encode(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @classmethod
    def decode(cls, data: bytes) -> RetryPlan:
        obj = json.loads(data)
        return cls(str(obj["of_job"]), int(obj["total_mbs"]), tuple(int(i) for i in obj["run"]))


def read_retry_plan(job_root: Path) -> RetryPlan | None:
    """The job's retry plan; None for an ordinary job.

    Raises:
        InputError: ``retry.json`` exists but cannot be read.
    """
    try:
        data = (job_root / RETRY_FILE).read_bytes()
    except FileNotFoundError:
        return None
    try:
        return RetryPlan.decode(data)
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{job_root / RETRY_FILE} is not a retry plan: {exc}") from exc


def select_mini_batches(plan: RetryPlan, mbs: Iterator[MiniBatch]) -> Iterator[MiniBatch]:
    """The planned mini-batches the retry runs, renumbered from 0 (pure).

    Raises:
        InputError: the input no longer splits into the earlier job's mini-batches.
    """
    wanted = iter(plan.run)
    next_wanted = next(wanted, None)
    seen = kept = 0
    for mb in mbs:
        seen += 1
        if mb.index == next_wanted:
            yield MiniBatch(kept, mb.payload, mb.items, mb.key)
            kept += 1
            next_wanted = next(wanted, None)
    if seen != plan.total_mbs or next_wanted is not None:
        raise InputError(
            f"the input now splits into {seen} mini-batches, job {plan.of_job} had "
            f"{plan.total_mbs}: it changed since, so its mini-batches cannot be matched"
        )


def len_so_far(plan: RetryPlan, original: int) -> int:
    """The retry's index of the earlier job's mini-batch ``original`` (binary search)."""
    lo, hi = 0, len(plan.run)
    while lo < hi:
        mid = (lo + hi) // 2
        if plan.run[mid] < original:
            lo = mid + 1
        else:
            hi = mid
    return lo


def plan_retry(layout: JobLayout, mbs: Iterator[MiniBatch]) -> Iterator[MiniBatch]:
    """The job's mini-batches: all of them, or for a retry job only those it reruns."""
    plan = read_retry_plan(layout.root)
    return mbs if plan is None else select_mini_batches(plan, mbs)


def succeeded_pieces(layout: JobLayout) -> dict[int, Piece]:
    """Where each succeeded mini-batch's append_row bytes are, from the committed results."""
    pieces: dict[int, Piece] = {}
    try:
        shards = sorted(os.listdir(layout.done))
    except FileNotFoundError:
        return pieces
    for shard in shards:
        for name in sorted(os.listdir(layout.done / shard)):
            parsed = parse_done_name(name)
            if parsed is None:
                continue
            path = layout.result(*parsed)
            meta = read_result_meta(path)
            for o in meta.outcomes if meta is not None else ():
                if o.status == SUCCEEDED:
                    pieces[o.index] = Piece(path, o.offset, o.length, o.header)
    return pieces


def combine_outputs(layout: JobLayout, out_path: Path, *, write_header: bool) -> Path | None:
    """Rebuild a completed retry job's output with the earlier job's rows; None if not a retry."""
    plan = read_retry_plan(layout.root)
    if plan is None:
        return None
    earlier = JobLayout(layout.root.parent / plan.of_job, plan.of_job)
    old, new = succeeded_pieces(earlier), succeeded_pieces(layout)
    merge = OrderedMerge(out_path, write_header=write_header)
    try:
        for i in range(plan.total_mbs):
            k = len_so_far(plan, i)
            rerun = k < len(plan.run) and plan.run[k] == i
            piece = new.get(k) if rerun else old.get(i)
            merge.offer(i, piece or Piece(None))
    except BaseException:
        merge.abandon()
        raise
    return merge.finish()
