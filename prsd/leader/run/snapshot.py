"""A frozen picture of one job: what ``status.json`` and the end-of-job files show.

The driver takes a :class:`JobSnapshot` from its :class:`~prsd.leader.run.book.JobBook`
and hands it to :mod:`prsd.leader.run.status` and :mod:`prsd.leader.end.finish`, which read
nothing else of the driver. How a job ended (``state/final.json``) is
:class:`prsd.spool.finalrecord.FinalState`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prsd.leader.run.verdict import Counts
    from prsd.spool.envrecord import EnvBuild
    from prsd.spool.finalrecord import FinalState


@dataclass(frozen=True)
class NodeRow:
    """One node serving the job, as its last report said."""

    node_id: str
    workers: int
    init_failures: int
    gave_up: bool
    environment: EnvBuild | None = None  # the node's build


@dataclass(frozen=True)
class JobSnapshot:
    """One job's counts, errors and nodes at one moment (no I/O, nothing live)."""

    job_id: str
    name: str
    elapsed_s: float
    counts: Counts
    planned_mbs: int
    attempts: int
    requeues: int
    outstanding_tasks: int
    split_done: bool
    output: str  # the append_row file the job writes ("" when none)
    final: FinalState | None
    first_error: str  # the root cause ("" before any failure)
    errors: tuple[tuple[str, int, str], ...]  # (message, count, first place), top ten
    last_errors: tuple[dict[str, Any], ...]
    nodes: tuple[NodeRow, ...]
    init_detail: str
    progress_line: str
