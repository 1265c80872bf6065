"""A retry's units over the current split: which earlier results keep their place.

Invariant: the units are worked out from the retry plan, the kept results and the
current split alone (:mod:`prsd.retryplan.plan` decides by content); nothing here
writes. The leader plans a retry job with it and ``prsctl retry`` dry-runs the same
code before it writes one, so both agree on what runs again.

Errors: :class:`InputError` when a partitioned table's files changed since the earlier
job (its groups draw rows from every file, so none can be kept).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from prsd.errors import InputError
from prsd.retryplan.plan import PlanNotes, Unit, plan_file_units, plan_payload_units
from prsd.spool.retryrecords import RetryPlan, named

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from prsd.jobspec import JobSpec
    from prsd.retryplan.kept import KeptResult
    from prsd.retryplan.plan import Kept
    from prsd.wire.records import MiniBatch


def retry_mode(spec: JobSpec) -> str:
    """How a retry of this job matches earlier results."""
    if spec.input.format == "files" and not spec.partition_keys:
        return "files"
    if spec.partition_keys and spec.input.format != "files":
        return "groups"
    return "payload"


def changed_since(path: str, since_ns: int) -> bool:
    """Was ``path`` edited (or replaced, or removed) after ``since_ns``?

    The later of mtime and ctime is compared: ctime cannot be set back by copying
    tools, so a file replaced by ``cp -p`` or ``rsync -t`` still counts as edited.
    """
    try:
        st = os.stat(path)
    except OSError:
        return True
    return max(st.st_mtime_ns, st.st_ctime_ns) > since_ns


def plan_units(
    plan: RetryPlan,
    kept: list[KeptResult],
    mbs: Iterable[MiniBatch],
    notes: PlanNotes,
    spec: JobSpec | None,
) -> Iterator[Unit]:
    """The retry's units over the current split (see :mod:`prsd.retryplan.plan`).

    Raises:
        InputError: a partitioned table's files changed since the earlier job.
    """
    if plan.mode == "groups" and spec is not None:
        _refuse_changed_tables(plan, kept, spec)
    table: dict[str, Kept] = {}
    for ref, k in enumerate(kept):
        table.setdefault(k.first, k.kept(ref))  # a job's own results before inherited ones
    if plan.mode != "files":
        return plan_payload_units(mbs, table, changed_since, notes)
    failed = set(plan.failed_items)

    def paths() -> Iterator[str]:
        for mb in mbs:
            for p in mb.payload:
                if p in failed:
                    notes.seen_failed.add(p)
                yield p

    size = spec.mini_batch_size if spec is not None else 1
    return plan_file_units(paths(), table, size, changed_since, notes)


def _refuse_changed_tables(plan: RetryPlan, kept: list[KeptResult], spec: JobSpec) -> None:
    from prsd.inputsplit.planner import table_files  # the listing of a table input

    since = min((k.since_ns for k in kept), default=0)
    edited = [p for p in table_files(spec, None) if changed_since(p, since)]
    edited += [d + "/" for d in _folders(spec.input.paths) if changed_since(d, since)]
    if edited:
        raise InputError(
            f"the input changed since job {plan.of_job} ({len(edited)} files edited or added, "
            "or folders with files added or removed: "
            f"{named(edited, len(edited))}); partition groups draw rows from every file, so "
            "no earlier group can be kept: submit the job anew"
        )


def _folders(roots: Iterable[str]) -> Iterator[str]:
    """Every folder of the input: a file added to or removed from one changes its times."""
    for root in roots:
        if os.path.isdir(root):
            for folder, _, _ in os.walk(root):
                yield folder
