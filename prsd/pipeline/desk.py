"""The leader's pipeline desk: each round, move ready steps into the inbox and end pipelines.

Invariant: the desk keeps nothing in memory that the spool does not hold. Each round
it reads every unfinished pipeline's record and its steps' places (:mod:`.view`), then:

- a cancel asked for (``cancel`` in the pipeline folder) cancels the running steps
  (their jobs' ``state/cancel``) and skips the waiting ones;
- a failed step skips every waiting step (``continue_on_step_failure: false``, the
  default) or only the steps that depend on it (true), with the reason recorded in
  ``state.json`` before anything else moves;
- a waiting step whose dependencies all completed is renamed into ``inbox/<its id>``
  (the user's folder, so the user stays its owner), where intake takes it as any job;
- once every step has ended, ``logs/job_result.txt`` names the first failed step and
  its first error, and ``final.json`` is written last.

A leader that takes over therefore resumes a pipeline where the last one left it:
completed steps stay completed, running steps' jobs are resumed by the ordinary job
take-over, and nothing is released twice (a rename happens once).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

from prsd.logconfig import get_logger
from prsd.pipeline.graph import downstream
from prsd.pipeline.stdlog import publish_std_log
from prsd.pipeline.view import ENDED, FAILED, SUCCEEDED, StepView, job_owner_uid, step_views
from prsd.spool.atomic import write_atomic
from prsd.spool.badrecord import BadRecord
from prsd.spool.endrecords import final_record
from prsd.spool.pipelinefolder import OpenPipelineFolder, PipelineFolder
from prsd.spool.pipelinerecord import pipeline_ids, pipelines_folder
from prsd.spool.states import JobState
from prsd.wire.logtree import LogTree

if TYPE_CHECKING:
    from collections.abc import Collection

    from prsd.spool.layout import SpoolLayout
    from prsd.spool.pipelinerecord import PipelineRecord

log = get_logger("prsd.leader")

CHECK_S = 0.5


class PipelineDesk:
    """Drives the spool's pipelines (``only``: those pipelines alone, for ``prsd run``)."""

    def __init__(self, spool: SpoolLayout, *, only: Collection[str] | None = None) -> None:
        self.spool = spool
        self.only = None if only is None else frozenset(only)
        self._last = -1e9
        self._made = False

    def step(self, now: float, *, force: bool = False) -> bool:
        """One round over the unfinished pipelines; True when a step was released or one ended."""
        if not force and now - self._last < CHECK_S:
            return False
        self._last = now
        if not self._made:  # the daemons make pipelines/ (1777) where users cannot
            pipelines_folder(self.spool)
            self._made = True
        moved = False
        for pid in pipeline_ids(self.spool):
            if self.only is not None and pid not in self.only:
                continue
            folder = PipelineFolder(self.spool, pid)
            if folder.ended():
                continue
            try:
                with folder.open() as opened:
                    moved = self.drive(opened, folder) or moved
            except Exception as exc:  # noqa: BLE001 - one pipeline's boundary
                log.warning("cannot drive a pipeline", pipeline=pid, error=str(exc))
        return moved

    def drive(self, opened: OpenPipelineFolder, folder: PipelineFolder) -> bool:
        """One round of one pipeline (see the module docstring)."""
        try:
            record = folder.record()
        except BadRecord as exc:
            self._end(opened, JobState.FAILED, f"the pipeline record is broken: {exc}", {}, None)
            return True
        if record.pipeline_id != opened.pipeline_id:
            why = "the pipeline record names another pipeline"
            self._end(opened, JobState.FAILED, why, {}, None)
            return True
        owner = opened.owner_uid
        views = step_views(folder, record, owner)
        state = folder.state()
        skips = plan_skips(record, views, canceled=folder.cancel_asked())
        if skips:
            state = state.skipping(skips)
            opened.write_state(state)
            views = step_views(folder, record, owner)
        # Only jobs the leader recorded for the pipeline's owner are acted on.
        mine = [v for v in views.values() if job_owner_uid(self.spool, v.job_id) == owner]
        if folder.cancel_asked():
            state = dataclasses.replace(state, canceled=True)
            self._cancel_running(mine)
        moved = bool(skips)
        for view in mine:
            if view.kind == "command" and view.state in SUCCEEDED | FAILED - {"Lost"}:
                publish_std_log(self.spool.job(view.job_id))
        taken = {}
        for name, view in views.items():
            if view.state == "Waiting" and all(
                views[d].state in SUCCEEDED for d in record.steps[name].deps
            ):
                if self._taken(view.job_id):
                    taken[name] = f"not run: its job id {view.job_id} is taken by another job"
                    continue
                moved = self._release(opened, name, view) or moved
        if taken:  # next round skips what depends on it, or everything still waiting
            opened.write_state(state.skipping(taken))
            return True
        if all(v.state in ENDED for v in views.values()):
            self._finish(opened, record, views, state.canceled)
            return True
        return moved

    def _cancel_running(self, views: list[StepView]) -> None:
        for view in views:
            if view.state == JobState.RUNNING:
                job = self.spool.job(view.job_id)
                if not os.path.lexists(job.cancel):
                    write_atomic(job.cancel, b"", durable=False)

    def _taken(self, job_id: str) -> bool:
        """Another submission holds the step's id (it never was this step's: not released)."""
        return os.path.lexists(self.spool.queued(job_id)) or os.path.lexists(
            self.spool.job(job_id).root
        )

    def _release(self, opened: OpenPipelineFolder, name: str, view: StepView) -> bool:
        if not opened.move_step(name, self.spool.queued(view.job_id)):
            return False
        pid = opened.pipeline_id
        log.info("pipeline step released", pipeline=pid, step=name, job_id=view.job_id)
        return True

    def _finish(
        self,
        opened: OpenPipelineFolder,
        record: PipelineRecord,
        views: dict[str, StepView],
        canceled: bool,
    ) -> None:
        failed = [v for v in views.values() if v.state in FAILED]
        failed = failed or [v for v in views.values() if v.state == "Skipped"]
        if canceled:
            state, reason = JobState.CANCELED, "Canceled by prsctl cancel."
        elif failed:
            first = failed[0]
            state = JobState.FAILED
            reason = f"step {first.name} ended {first.state}: {first_error(self.spool, first)}"
        else:
            state, reason = JobState.COMPLETED, f"all {len(views)} steps completed"
        self._end(opened, state, reason, views, record)
        log.info("pipeline ended", pipeline=opened.pipeline_id, state=state)

    def _end(
        self,
        opened: OpenPipelineFolder,
        state: JobState,
        reason: str,
        views: dict[str, StepView],
        record: PipelineRecord | None,
    ) -> None:
        lines = [state, reason]
        for view in views.values():
            where = self.spool.job(view.job_id).logs
            extra = f": {view.reason}" if view.reason and view.state != JobState.COMPLETED else ""
            lines.append(f"  step {view.name} ({view.kind}) {view.state}{extra} [{where}]")
        if record is not None and record.ignored:
            lines.append("not used by prsd (Azure only): " + ", ".join(record.ignored))
        result = LogTree.of_job(Path()).job_result  # logs/job_result.txt, as for a job
        text = ("\n".join(lines) + "\n").encode()
        opened.write(result.name, text, sub=result.parent.as_posix())
        root_cause = reason if state == JobState.FAILED else ""
        opened.write_final(final_record(state, reason, root_cause=root_cause))


def plan_skips(
    record: PipelineRecord, views: dict[str, StepView], *, canceled: bool
) -> dict[str, str]:
    """The waiting steps to skip now, each with its reason (pure)."""
    waiting = {n for n, v in views.items() if v.state == "Waiting"}
    if canceled:
        return dict.fromkeys(waiting, "not run: the pipeline was canceled")
    failed = [n for n, v in views.items() if v.state in FAILED or v.state == "Skipped"]
    if not failed:
        return {}
    first = failed[0]
    if not record.continue_on_step_failure:
        why = (
            f"not run: step {first} ended {views[first].state} "
            "(settings.continue_on_step_failure is false)"
        )
        return dict.fromkeys(waiting, why)
    out = {}
    for name in waiting & downstream(record.deps(), failed):
        cause = next(d for d in _ancestors(record, name) if d in failed)
        out[name] = f"not run: it depends on step {cause}, which ended {views[cause].state}"
    return out


def first_error(spool: SpoolLayout, view: StepView) -> str:
    """The failed step's first error (its job_result.txt's ``First error:``), else its reason."""
    if view.state == "Lost":
        return view.reason  # not a job of this pipeline's: nothing of it is read
    path = LogTree.of_job(spool.job(view.job_id).root).job_result
    try:
        lines = [x.strip() for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    except OSError:
        lines = []
    for line in lines:
        if line.startswith("First error:"):
            return line.removeprefix("First error:").split("\\n", 1)[0].strip()
    return lines[1] if len(lines) > 1 else (view.reason or "no reason recorded")


def _ancestors(record: PipelineRecord, name: str) -> list[str]:
    out: list[str] = []
    todo = list(record.steps[name].deps)
    while todo:
        dep = todo.pop(0)
        if dep not in out:
            out.append(dep)
            todo.extend(record.steps[dep].deps)
    return out
