"""What ``prsctl retry`` works out before it writes a retry job: what to run.

Invariant: a retry is written only when it has something to run: some input of the
current split has no result yet (a dry run of the same planning the leader does,
:func:`prsd.retryplan.units.plan_units`). Everything refused is one line naming why.
Nothing here writes to the spool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.errors import PrsdError
from prsd.inputsplit.planner import plan_mini_batches
from prsd.jobspec.model import short_is_failure
from prsd.retryplan.kept import results_to_keep
from prsd.retryplan.plan import PlanNotes, number_runs
from prsd.retryplan.units import plan_units, retry_mode
from prsd.spool.codedigest import code_digest
from prsd.spool.retryrecords import RetryOrder, RetryPlan

if TYPE_CHECKING:
    from prsd.jobspec import JobSpec
    from prsd.retryplan.kept import KeptResult
    from prsd.spool.layout import JobLayout


@dataclass(frozen=True)
class RetryDraft:
    plan: RetryPlan
    kept: list[KeptResult]
    runs: int
    summary: str


def failed_inputs(old: JobLayout) -> tuple[str, ...]:
    """The earlier job's failed inputs (file lists), from its failed_items.txt."""
    try:
        text = old.log_tree.failed_items.read_text(encoding="utf-8")
    except OSError:
        return ()
    return tuple(ln.split("\t", 1)[0] for ln in text.splitlines() if ln and ln[0] != "#")


def draft_retry(
    old: JobLayout, spec: JobSpec, *, code: str, overrides: tuple[str, ...]
) -> RetryDraft:
    """Plan the retry as the leader will, over the input as it is now.

    Raises:
        PrsdError: nothing would run (every input has its result), or the input
            changed in a way no result can be kept through.
        OSError: the input cannot be read.
    """
    mode = retry_mode(spec)
    kept = results_to_keep(old, mode, keep_short=not short_is_failure(spec))
    earlier = old_code_digest(old)
    plan = RetryPlan(old.job_id, mode, failed_inputs(old) if mode == "files" else (), code,
                     earlier, overrides)  # fmt: skip
    notes = PlanNotes()
    order = RetryOrder()
    units = plan_units(plan, kept, plan_mini_batches(spec), notes, spec)
    runs = sum(1 for _ in number_runs(units, order.units))
    order.kept, order.voided, order.voided_count = notes.kept, notes.voided[:10], len(notes.voided)
    gone = [p for p in plan.failed_items if p not in notes.seen_failed]
    order.gone_failed, order.gone_failed_count = gone[:10], len(gone)
    summary = order.summary(old.job_id)
    if runs == 0:
        raise PrsdError(
            f"every input of job {old.job_id} has its result: nothing to retry ({summary})"
        )
    return RetryDraft(plan, kept, runs, summary)


def old_code_digest(old: JobLayout) -> str:
    return code_digest(old.code) if old.code.is_dir() else ""
