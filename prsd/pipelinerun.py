"""``prsd run PIPELINE``: lead and serve one pipeline and its steps' jobs in this process.

(:func:`pipeline_file` says which submissions are pipelines.)

The same Leader (with its pipeline desk) and Agent the daemons run, limited to this
pipeline and its steps, until the pipeline's ``final.json`` is written.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from prsd.agent.agent import Agent, AgentOptions
from prsd.cli import console
from prsd.cli.pipelines import submit_here
from prsd.jobspec.pipefile import pipeline_file
from prsd.leader.election import Deposed, Election
from prsd.leader.job import Hint
from prsd.leader.leader import Leader, LeaderLinks
from prsd.pipeline.desk import FINAL
from prsd.pipeline.view import step_views
from prsd.wire.logtree import LogTree
from prsd.wire.nodereport import environment_line

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from prsd.pipeline.record import PipelineRecord
    from prsd.storage.layout import SpoolLayout, TaskName

__all__ = ["pipeline_file", "progress_line", "run_pipeline", "run_pipeline_here"]

PROGRESS_EVERY_S = 5.0


async def run_pipeline(
    spool: SpoolLayout,
    record: PipelineRecord,
    options: AgentOptions,
    *,
    on_progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Drive ``record``'s pipeline to its end here; its ``final.json``."""
    links = LeaderLinks()

    def on_commit(committed_job: str, task: TaskName) -> None:
        links.hints.append(Hint(committed_job, task, options.node_id))
        links.leader_bell.ring()

    steps = frozenset(s.job_id for s in record.steps.values() if not s.reused)
    leader = Leader(
        spool, election=Election(spool), links=links, only_jobs=steps | {record.pipeline_id}
    )
    agent = Agent(spool, options, bell=links.agent_bell, on_commit=on_commit, only_job=steps)
    folder = spool.root / "pipelines" / record.pipeline_id
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.run)
        tg.start_soon(_lead, leader)
        waited = 0.0
        while not await anyio.to_thread.run_sync((folder / FINAL).exists):
            await anyio.sleep(0.2)
            waited += 0.2
            if on_progress is not None and waited >= PROGRESS_EVERY_S:
                waited = 0.0
                on_progress(progress_line(spool, record, leader))
        tg.cancel_scope.cancel()
    final: dict[str, Any] = json.loads((folder / FINAL).read_bytes())
    return final


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
    folder = spool.root / "pipelines" / record.pipeline_id
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
    """``prsd run`` of a pipeline file: submit, drive here, print the result."""
    record = submit_here(path, spool, overrides, name, quiet=quiet)
    options = AgentOptions(node_id=node_id)
    final = anyio.run(lambda: run_pipeline(spool, record, options, on_progress=console.say))
    result = LogTree.of_job(spool.root / "pipelines" / record.pipeline_id).job_result
    try:
        console.say(result.read_text(encoding="utf-8").rstrip())
    except OSError:
        console.say(f"{final['state']}: {final['reason']}")
    return int(final["exit_code"])
