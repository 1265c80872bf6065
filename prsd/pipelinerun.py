"""``prsd run PIPELINE``: lead and serve one pipeline and its steps' jobs in this process.

(:func:`pipeline_file` says which submissions are pipelines.)

The same Leader (with its pipeline desk) and Agent the daemons run, limited to this
pipeline and its steps, until the pipeline's ``final.json`` is written and its steps'
workers have stopped. Ctrl-C is the user's, as for a job (:mod:`prsd.embedded`): the
first cancels the pipeline and waits, a second leaves at once (exit 130), taking back
a cancel no leader acted on so the pipeline stays for a fleet.
"""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from prsd.agent.agent import Agent, AgentOptions
from prsd.cli import console
from prsd.cli.pipelines import retry_pipeline, submit_here
from prsd.embedded import CtrlC, LeftEarly
from prsd.jobspec.pipefile import pipeline_file
from prsd.leader.election import Deposed, Election
from prsd.leader.job import Hint
from prsd.leader.leader import Leader, LeaderLinks
from prsd.pipeline.view import step_views
from prsd.storage.pipelinelayout import PIPELINE_CANCEL, PIPELINE_FINAL
from prsd.wire.logtree import LogTree
from prsd.wire.nodereport import environment_line

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from prsd.pipeline.record import PipelineRecord
    from prsd.storage.layout import SpoolLayout, TaskName

__all__ = [
    "pipeline_file",
    "progress_line",
    "retry_pipeline_here",
    "run_pipeline",
    "run_pipeline_here",
]

PROGRESS_EVERY_S = 5.0


async def run_pipeline(
    spool: SpoolLayout,
    record: PipelineRecord,
    options: AgentOptions,
    *,
    on_progress: Callable[[str], None] | None = None,
    interrupts: bool = False,
) -> dict[str, Any] | LeftEarly:
    """Drive ``record``'s pipeline to its end here; its ``final.json``.

    With ``interrupts``, Ctrl-C is the user's, as for a job (:class:`prsd.embedded.CtrlC`):
    the first cancels the pipeline (its running steps canceled, the rest skipped) and
    waits until it has ended and its workers have stopped; a second leaves at once.
    """
    links = LeaderLinks()

    def on_commit(committed_job: str, task: TaskName) -> None:
        links.hints.append(Hint(committed_job, task, options.node_id))
        links.leader_bell.ring()

    steps = frozenset(s.job_id for s in record.steps.values() if not s.reused)
    leader = Leader(
        spool,
        election=Election(spool, one_job=True),
        links=links,
        only_jobs=steps | {record.pipeline_id},
    )
    agent = Agent(spool, options, bell=links.agent_bell, on_commit=on_commit, only_job=steps)
    folder = spool.pipeline(record.pipeline_id).root
    ctrl_c = pipeline_ctrl_c(folder, record.pipeline_id, on_progress)
    async with anyio.create_task_group() as outer:
        if interrupts:
            outer.start_soon(ctrl_c.listen, outer.cancel_scope)
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.run)
            tg.start_soon(_lead, leader)
            await _until_final(spool, record, leader, on_progress)
            agent.job_ended()  # its steps' runs end as their jobs have
            for running in list(agent.runs.values()):
                await running.done.wait()  # their workers stopped at their own pace
            tg.cancel_scope.cancel()
        outer.cancel_scope.cancel()
    if ctrl_c.left:
        return await anyio.to_thread.run_sync(_left_pipeline, folder, ctrl_c)
    final: dict[str, Any] = json.loads((folder / PIPELINE_FINAL).read_bytes())
    return final


async def _until_final(
    spool: SpoolLayout,
    record: PipelineRecord,
    leader: Leader,
    on_progress: Callable[[str], None] | None,
) -> None:
    folder = spool.pipeline(record.pipeline_id).root
    waited = 0.0
    while not await anyio.to_thread.run_sync((folder / PIPELINE_FINAL).exists):
        await anyio.sleep(0.2)
        waited += 0.2
        if on_progress is not None and waited >= PROGRESS_EVERY_S:
            waited = 0.0
            on_progress(progress_line(spool, record, leader))


def pipeline_ctrl_c(folder: Path, pid: str, say: Callable[[str], None] | None) -> CtrlC:
    """Ctrl-C for a pipeline: its cancel is the pipeline's cancel mark (as ``prsctl cancel``)."""

    def ask() -> Callable[[], None]:
        (folder / PIPELINE_CANCEL).touch()
        return partial(_withdraw, folder)

    return CtrlC(f"pipeline {pid}", ask, folder, say)


def _withdraw(folder: Path) -> None:
    """A cancel mark no leader acted on (the pipeline has not ended) is taken back."""
    if not (folder / PIPELINE_FINAL).exists():
        with contextlib.suppress(FileNotFoundError):
            (folder / PIPELINE_CANCEL).unlink()


def _left_pipeline(folder: Path, ctrl_c: CtrlC) -> LeftEarly:
    if ctrl_c.withdraw is not None:
        ctrl_c.withdraw()
    try:
        final = json.loads((folder / PIPELINE_FINAL).read_bytes())
    except (OSError, ValueError):
        return LeftEarly("")
    return LeftEarly(str(final.get("state", "")))


async def _lead(leader: Leader) -> None:
    election = leader.election
    patient = False  # a spool of its own: take the lease at once (prsd.embedded)
    while True:
        epoch = await anyio.to_thread.run_sync(
            partial(election.try_once, anyio.current_time(), patient=patient)
        )
        patient = True
        if epoch:
            try:
                await leader.lead()
            except Deposed:
                leader.drivers.clear()
                continue
        await anyio.sleep(election.beat_s / 2)


def progress_line(spool: SpoolLayout, record: PipelineRecord, leader: Leader) -> str:
    """``pipeline NAME: step a Completed; step b Running (progress)``; a step whose
    environment is being built says so (``; building environment: resolving (0:00:12)``)."""
    folder = spool.pipeline(record.pipeline_id).root
    parts = []
    for view in step_views(spool, folder, record).values():
        driver = leader.drivers.get(view.job_id)
        now = datetime.now(UTC)
        builds = (
            [environment_line(n.environment, now) for n in driver.book.node_inits] if driver else []
        )
        build = "".join(f"; {line}" for line in builds if line.startswith("building"))
        more = f" ({driver.progress_line(anyio.current_time())}{build})" if driver else ""
        parts.append(f"{view.name} {view.state}{more}")
    return f"pipeline {record.name}: " + "; ".join(parts)


def run_pipeline_here(
    path: Path,
    spool: SpoolLayout,
    overrides: Sequence[str],
    name: str | None,
    node_id: str,
    *,
    quiet: bool = False,
) -> int:
    """``prsd run`` of a pipeline file: submit, drive here, print the result (130 when a
    second Ctrl-C left early). This node builds every step's environment, so a step's
    python pin no interpreter here meets is refused before any id is printed."""
    from prsd.cli.buildable import refuse_unbuildable

    check = partial(refuse_unbuildable, spool.root)
    record = submit_here(path, spool, overrides, name, quiet=quiet, check=check)
    return drive_here(spool, record, node_id)


def retry_pipeline_here(
    spool: SpoolLayout, pid: str, overrides: Sequence[str], name: str | None, node_id: str
) -> int:
    """``prsd run --retry PIPELINE``: ``prsctl retry``'s new pipeline, driven here."""
    record = retry_pipeline(spool, pid, overrides, name)
    console.say(f"pipeline {record.pipeline_id}")
    return drive_here(spool, record, node_id)


def drive_here(spool: SpoolLayout, record: PipelineRecord, node_id: str) -> int:
    """Run the submitted pipeline here; print its result; its exit code."""
    options = AgentOptions(node_id=node_id)
    final = anyio.run(
        lambda: run_pipeline(spool, record, options, on_progress=console.say, interrupts=True)
    )
    if isinstance(final, LeftEarly):
        console.say(left_early_line(spool, record.pipeline_id, final))
        return 130
    result = LogTree.of_job(spool.pipeline(record.pipeline_id).root).job_result
    try:
        console.say(result.read_text(encoding="utf-8").rstrip())
    except OSError:
        console.say(f"{final['state']}: {final['reason']}")
    return int(final["exit_code"])


def left_early_line(spool: SpoolLayout, pid: str, left: LeftEarly) -> str:
    """What a second Ctrl-C leaves behind, said in one line."""
    if left.ended:
        return (
            f"left at once: pipeline {pid} ended {left.ended}; its workers stop with this process"
        )
    root = spool.root
    return (
        f"left at once: pipeline {pid} stays in the spool {root} for a fleet "
        f"(`prsd leader --spool {root}` and `prsd agent --spool {root}` run it); "
        f"see it with `prsctl status {pid} --spool {root}`, "
        f"cancel it with `prsctl cancel {pid} --spool {root}`"
    )
