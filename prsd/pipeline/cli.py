"""The command-line faces of a pipeline: ``prsd run``, ``prsctl submit``, status rows.

Guarantees: a pipeline is submitted whole or not at all (:mod:`prsd.pipeline.stage`);
what prsd will not use (Azure-only keys) is said once at submit; ``prsd run`` exits
with the pipeline's code (0 completed, 42 failed, 43 canceled) after printing its
``job_result.txt``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from prsd.cli import console
from prsd.pipeline.record import pipeline_ids, read_record
from prsd.pipeline.stage import submit_pipeline
from prsd.pipeline.view import step_views

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from prsd.pipeline.record import PipelineRecord
    from prsd.storage.layout import SpoolLayout


def submit_here(
    path: Path, spool: SpoolLayout, overrides: Sequence[str], name: str | None
) -> PipelineRecord:
    """Submit the pipeline file and say what was made of it."""
    record = submit_pipeline(path, spool, overrides=overrides, name=name)
    console.say(f"pipeline {record.pipeline_id}")
    for step in record.steps.values():
        console.say(f"  step {step.name} ({step.kind}): job {step.job_id}")
    if record.ignored:
        console.say("not used by prsd (Azure only): " + ", ".join(record.ignored))
    return record


def run_pipeline_here(
    path: Path, spool: SpoolLayout, overrides: Sequence[str], name: str | None, node_id: str
) -> int:
    """``prsd run`` of a pipeline file: submit, drive here, print the result."""
    from prsd.agent.agent import AgentOptions
    from prsd.pipeline.run import run_pipeline

    record = submit_here(path, spool, overrides, name)
    options = AgentOptions(node_id=node_id)
    final = anyio.run(lambda: run_pipeline(spool, record, options, on_progress=console.say))
    result = spool.root / "pipelines" / record.pipeline_id / "logs" / "job_result.txt"
    try:
        console.say(result.read_text(encoding="utf-8").rstrip())
    except OSError:
        console.say(f"{final['state']}: {final['reason']}")
    return int(final["exit_code"])


def pipeline_status(spool: SpoolLayout, pid: str) -> dict[str, Any]:
    """``prsctl status PIPELINE --json``: the pipeline's state and its steps'."""
    import json

    folder = spool.root / "pipelines" / pid
    record = read_record(folder)
    try:
        final = json.loads((folder / "final.json").read_bytes())
    except (OSError, ValueError):
        final = None
    steps = [
        {
            "step": view.name,
            "kind": view.kind,
            "job_id": view.job_id,
            "state": view.state,
            "reason": view.reason,
            "depends_on": list(record.steps[view.name].deps),
        }
        for view in step_views(spool, folder, record).values()
    ]
    state = final["state"] if final else "Running"
    return {
        "pipeline_id": pid,
        "name": record.name,
        "kind": "pipeline",
        "state": state,
        "reason": final["reason"] if final else "",
        "exit_code": final["exit_code"] if final else None,
        "steps": steps,
        "ignored": list(record.ignored),
    }


def is_pipeline_id(spool: SpoolLayout, text: str) -> bool:
    return text in pipeline_ids(spool)
