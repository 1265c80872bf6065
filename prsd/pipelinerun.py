"""``prsd run PIPELINE``: lead and serve one pipeline and its steps' jobs in this process.

(:func:`pipeline_file` says which submissions are pipelines.)

The same Leader (with its pipeline desk) and Agent the daemons run, limited to this
pipeline and its steps, until the pipeline's ``final.json`` is written and its steps'
workers have stopped: :func:`prsd.runhere.run_here`, as for a job. Ctrl-C is the
user's: the first cancels the pipeline (its cancel mark) and waits, a second leaves at
once (exit 130), taking back a cancel no leader acted on so the pipeline stays for a
fleet.

Errors: as :func:`~prsd.runhere.run_here`; submitting raises what
:func:`prsd.cli.pipelines.submit_here` raises, before anything runs.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from prsd.agent.agent import AgentOptions
from prsd.cli import console
from prsd.cli.pipelines import retry_pipeline, submit_here
from prsd.ctrlc import LeftEarly
from prsd.errors import PrsdError
from prsd.jobspec.pipefile import pipeline_file
from prsd.pipeline.view import step_views
from prsd.runhere import Here, run_here
from prsd.spool.nodereport import environment_line
from prsd.spool.pipelinefolder import PipelineFolder
from prsd.wire.logtree import LogTree

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from prsd.jobspec import JobSpec
    from prsd.leader.leader import Leader
    from prsd.spool.layout import SpoolLayout
    from prsd.spool.pipelinerecord import PipelineRecord

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
    """Drive ``record``'s pipeline to its end here (:func:`prsd.runhere.run_here`); its
    ``final.json``.

    With ``interrupts``, Ctrl-C is the user's, as for a job: the first cancels the
    pipeline (its running steps canceled, the rest skipped) and waits until it has ended
    and its workers have stopped; a second leaves at once.
    """

    async def watch(leader: Leader) -> None:
        assert on_progress is not None
        while True:
            await anyio.sleep(PROGRESS_EVERY_S)
            on_progress(progress_line(spool, record, leader))

    here = pipeline_here(spool, record)
    end = await run_here(
        spool,
        here,
        options,
        say=on_progress,
        interrupts=interrupts,
        watch=watch if on_progress is not None else None,
    )
    if isinstance(end, LeftEarly):
        return end
    final = await anyio.to_thread.run_sync(PipelineFolder(spool, record.pipeline_id).final)
    if final is None:
        raise PrsdError(f"pipeline {record.pipeline_id}: its final.json cannot be read")
    return dataclasses.asdict(final)


def pipeline_here(spool: SpoolLayout, record: PipelineRecord) -> Here:
    """A pipeline and its steps' jobs (those not reused), run here; its cancel is the
    pipeline's cancel mark (as ``prsctl cancel``)."""
    pid = record.pipeline_id
    folder = PipelineFolder(spool, pid)
    steps = frozenset(s.job_id for s in record.steps.values() if not s.reused)

    def ask() -> Callable[[], None]:
        folder.ask_cancel()
        return folder.withdraw_cancel  # a cancel no leader acted on is taken back

    return Here(
        what=f"pipeline {pid}",
        serves=steps,
        leads=steps | {pid},
        final=folder.layout.final,
        ask_cancel=ask,
        cancel_in=folder.root,
        end_state=partial(_end_state, folder),
    )


def _end_state(folder: PipelineFolder) -> str:
    """The pipeline's state once it has ended ("" before: it stays for a fleet)."""
    final = folder.final()
    return final.state if final is not None else ""


def progress_line(spool: SpoolLayout, record: PipelineRecord, leader: Leader) -> str:
    """``pipeline NAME: step a Completed; step b Running (progress)``; a step whose
    environment is being built says so (``; building environment: resolving (0:00:12)``)."""
    parts = []
    for view in step_views(PipelineFolder(spool, record.pipeline_id), record).values():
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

    def check(folder: Path, spec: JobSpec) -> None:
        # folder: the step's staged folder, named after the step.
        where = f"{path}: jobs.{folder.name}"
        refuse_unbuildable(spool.root, folder, spec, quiet=quiet, where=where)

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
