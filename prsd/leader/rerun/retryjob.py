"""Retry jobs (``prsctl retry``): run again exactly the inputs an earlier job left without output.

A retry job is an ordinary job folder with a ``retry.json`` beside its ``job.yaml``
(the earlier job, how to match its results, the code digests) and a
``retry_kept.jsonl``: every succeeded result of the earlier job and of the jobs it
kept results from (:mod:`prsd.retryplan.kept`). The leader splits the input as it is
now and plans by content (:mod:`prsd.retryplan.plan`): a kept result whose inputs
are still there, unchanged, keeps its place in the output; every other input runs
again in new mini-batches numbered from 0. When the split ends, the order of kept
results and new mini-batches is written to ``retry_order.json``, with what changed.

Invariant: when the retry ends, its append_row file holds the output of the whole
job over the current input, each input's rows once, in input order: the kept bytes
where a result was kept, the retry's own results elsewhere. So it equals a clean
run's, whatever was deleted, added or edited between the jobs.

Errors: a ``retry.json`` that cannot be read, a kept result of another owner's job
or one that leaves its job's folder, and a partitioned table whose files changed
(its groups draw rows from every file, so none can be kept) fail the retry with one
line; nothing is ever mixed up silently.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from prsd.errors import InputError, PrsdError
from prsd.jobspec import JobSpec
from prsd.retryplan.retryfiles import read_trusted
from prsd.spool.atomic import write_atomic
from prsd.spool.badrecord import BadRecord
from prsd.spool.jobowner import OwnerRecordError, owner
from prsd.spool.layout import JobLayout
from prsd.spool.originrecord import read_origin_record
from prsd.spool.readsafe import UntrustedFile
from prsd.spool.retryrecords import NAMED, RetryOrder, RetryPlan
from prsd.spool.specfile import read_spec

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from prsd.retryplan.kept import KeptResult
    from prsd.wire.records import MiniBatch


def read_retry_plan(job_root: Path) -> RetryPlan | None:
    """The job's retry plan; None for an ordinary job.

    Raises:
        InputError: ``retry.json`` exists but cannot be read, or is not the daemons'.
    """
    try:
        data = read_trusted(JobLayout(job_root, job_root.name).retry_plan)
    except PrsdError as exc:
        raise InputError(exc.one_line()) from exc
    if data is None:
        return None
    try:
        return RetryPlan.decode(data)
    except BadRecord as exc:
        raise InputError(
            f"{JobLayout(job_root, job_root.name).retry_plan} is not a retry plan: {exc}"
        ) from exc


@dataclass(frozen=True)
class RetryInput:
    """What planning a retry needs besides the input: its plan and the kept results.

    Read by the leader from the job's control files (:func:`load_retry`) and handed to
    the process that reads the input (:mod:`prsd.leader.plan.planhelper`) as JSON.
    """

    plan: RetryPlan
    kept: list[KeptResult]

    def to_obj(self) -> dict[str, object]:
        return {"plan": asdict(self.plan), "kept": [k.to_line() for k in self.kept]}

    @classmethod
    def from_obj(cls, obj: dict[str, object]) -> RetryInput:
        from prsd.retryplan.kept import KeptResult

        lines = obj["kept"]
        assert isinstance(lines, list)
        kept = [KeptResult.from_line(line) for line in lines]
        return cls(RetryPlan.decode(json.dumps(obj["plan"]).encode()), kept)


def load_retry(layout: JobLayout) -> RetryInput | None:
    """The retry's plan and kept results (checked: the same owner); None for a plain job.

    Raises:
        InputError: the retry plan or its kept results cannot be used.
    """
    plan = read_retry_plan(layout.root)
    if plan is None:
        return None
    from prsd.retryplan.kept import check_same_owner, read_kept  # a retry's code: not a job's

    try:
        kept = read_kept(layout.root)
        check_same_owner(layout, {plan.of_job} | {k.job for k in kept})
    except PrsdError as exc:
        raise InputError(exc.one_line()) from exc
    return RetryInput(plan, kept)


def plan_retry(layout: JobLayout, mbs: Iterator[MiniBatch]) -> Iterator[MiniBatch]:
    """The job's mini-batches, all of them or for a retry only those it runs again,
    planned in this process (the order file written at the end).

    Raises:
        InputError: the retry plan or its kept results cannot be used.
    """
    retry = load_retry(layout)
    if retry is None:
        return mbs
    return retry_batches(retry, _spec_of(layout), mbs, lambda o: write_order(layout, o))


def retry_batches(
    retry: RetryInput,
    spec: JobSpec | None,
    mbs: Iterator[MiniBatch],
    on_order: Callable[[RetryOrder], None],
) -> Iterator[MiniBatch]:
    """The retry's mini-batches over the split ``mbs``; ``on_order`` gets the order at the end.

    Reads the input's files' times (and, for partition groups, lists the input): run
    with the job owner's ids.
    """
    from prsd.retryplan.plan import PlanNotes, number_runs
    from prsd.retryplan.units import plan_units

    plan, kept = retry.plan, retry.kept
    order = RetryOrder()
    notes = PlanNotes()
    yield from number_runs(plan_units(plan, kept, mbs, notes, spec), order.units)
    order.kept = notes.kept
    order.voided, order.voided_count = notes.voided[:NAMED], len(notes.voided)
    gone = [p for p in plan.failed_items if p not in notes.seen_failed]
    order.gone_failed, order.gone_failed_count = gone[:NAMED], len(gone)
    on_order(order)


def write_order(layout: JobLayout, order: RetryOrder) -> None:
    """``retry_order.json``: the daemons' file, 0640, the owner's group may read it."""
    write_atomic(layout.retry_order, order.encode(), mode=0o640)
    if os.geteuid() == 0:
        try:
            gid = owner(layout).gid
        except OwnerRecordError:
            return  # no owner known: the daemons' group keeps it
        os.chown(layout.retry_order, 0, gid, follow_symlinks=False)


def _spec_of(layout: JobLayout) -> JobSpec | None:
    try:
        return JobSpec.from_json(read_spec(layout, daemon_owned=True).decode("utf-8"))
    except (OSError, UntrustedFile, ValueError, KeyError, TypeError):
        return None


def read_order(layout: JobLayout) -> RetryOrder:
    """The retry's ``retry_order.json`` (a regular file of the daemons).

    Raises:
        PrsdError: it is missing or cannot be read.
    """
    try:
        data = read_trusted(layout.retry_order)
        if data is None:
            raise PrsdError(f"{layout.retry_order.name} is missing")
        return RetryOrder.decode(data)
    except (PrsdError, ValueError, TypeError) as exc:
        raise PrsdError(f"the retry's {layout.retry_order.name} cannot be read: {exc}") from exc


def retry_summary(layout: JobLayout) -> str | None:
    """One line on what a retry kept and ran, and which code ran what; None if not a retry."""
    plan = read_retry_plan(layout.root)
    if plan is None:
        return None
    try:
        order = read_order(layout)
    except PrsdError as exc:
        return exc.one_line()
    runs = sum(1 for u in order.units if u >= 0)
    return (
        f"{order.summary(plan.of_job)}; code {plan.code or '?'} ran this job's {runs} "
        f"mini-batches, code {plan.earlier_code or '?'} those of job {plan.of_job}"
    )


def job_code_digest(layout: JobLayout) -> str:
    """The digest of the job's code snapshot, as ``prsctl submit``/``retry`` recorded it."""
    try:
        plan = read_retry_plan(layout.root)
    except InputError:
        plan = None
    if plan is not None:
        return plan.code
    try:
        return read_origin_record(layout.origin).code
    except (UntrustedFile, BadRecord):
        return ""
