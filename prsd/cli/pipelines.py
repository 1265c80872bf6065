"""The command-line faces of a pipeline: ``prsctl submit``, status rows, cancel, retry.

Guarantees: a pipeline is submitted whole or not at all (:mod:`prsd.pipesubmit`);
what prsd will not use (Azure-only keys) is said once at submit; ``prsd run`` exits
with the pipeline's code (0 completed, 42 failed, 43 canceled) after printing its
``job_result.txt``.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prsd.cli import console
from prsd.errors import PrsdError
from prsd.jobspec.pipefile import pipeline_file
from prsd.jobspec.said import note_lines, spec_notes, stderr_text
from prsd.pipeline.view import SUCCEEDED, step_views
from prsd.pipesubmit import PIPELINE_FILE, submit_pipeline
from prsd.read.pipelines import NOT_STARTED, has_ended, read_pipeline_status, readable_pipelines
from prsd.spool.pipelinefolder import PipelineFolder
from prsd.spool.pipelinerecord import pipeline_ids, read_record

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from prsd.jobspec import JobSpec
    from prsd.spool.layout import SpoolLayout
    from prsd.spool.pipelinerecord import PipelineRecord


def say_notes(specs: Mapping[str, JobSpec], prog: str, *, quiet: bool) -> None:
    """The steps' notes on stderr, each line once (the pipeline's own keys are in every step's)."""
    if quiet:
        return
    lines = dict.fromkeys(line for s in specs.values() for line in note_lines(spec_notes(s)))
    if lines:
        sys.stderr.write(stderr_text(prog, lines))
        sys.stderr.flush()


def submit_here(
    path: Path,
    spool: SpoolLayout,
    overrides: Sequence[str],
    name: str | None,
    *,
    quiet: bool,
    check: Callable[[Path, JobSpec], None] | None = None,
) -> PipelineRecord:
    """Submit the pipeline file and say what was made of it (``check``: see submit_pipeline)."""
    specs: dict[str, JobSpec] = {}
    record = submit_pipeline(path, spool, overrides=overrides, name=name, specs=specs, check=check)
    console.say(f"pipeline {record.pipeline_id}")
    for step in record.steps.values():
        console.say(f"  step {step.name} ({step.kind}): job {step.job_id}")
    say_notes(specs, "prsd", quiet=quiet)
    return record


def table_rows(spool: SpoolLayout, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``prsctl status`` rows: jobs outside pipelines, then each pipeline with its steps."""
    pipelines = [read_pipeline_status(spool, pid) for pid in readable_pipelines(spool)]
    # A Lost step names a job that is not this pipeline's (another user's, or gone):
    # that job keeps its own row and lends the step nothing.
    in_pipelines = {s["job_id"] for p in pipelines for s in p["steps"] if s["state"] != "Lost"}
    by_id = {d.get("job_id"): d for d in docs}
    rows = [d for d in docs if d.get("job_id") not in in_pipelines]
    for p in pipelines:
        done = sum(1 for s in p["steps"] if s["state"] in SUCCEEDED)
        rows.append(
            {
                "job_id": f"{p['pipeline_id']} (pipeline)",
                "state": p["state"],
                "succeeded_mbs": done,  # the DONE column: steps done
                "total_mbs": len(p["steps"]),
                "elapsed_s": p["elapsed_s"],
            }
        )
        for s in p["steps"]:
            doc = {} if s["state"] == "Lost" else dict(by_id.get(s["job_id"]) or {})
            doc.update(job_id=f"  {s['step']} ({s['kind']}) {s['job_id']}", state=s["state"])
            rows.append(doc)
    return rows


def is_pipeline_id(spool: SpoolLayout, text: str) -> bool:
    return text in pipeline_ids(spool)


def started_steps(spool: SpoolLayout, pid: str) -> list[tuple[str, str]]:
    """(step, job id) of the steps whose job exists, in dependency order."""
    doc = read_pipeline_status(spool, pid)
    return [(s["step"], s["job_id"]) for s in doc["steps"] if s["state"] not in NOT_STARTED]


def handle_submit(
    spool: SpoolLayout,
    target: Path,
    overrides: Sequence[str],
    name: str | None,
    *,
    quiet: bool = False,
) -> bool:
    """``prsctl submit``: submit ``target`` as a pipeline when it is one; True if it was."""
    path = pipeline_file(target)
    if path is None:
        return False
    specs: dict[str, JobSpec] = {}
    record = submit_pipeline(path, spool, overrides=overrides, name=name, specs=specs)
    sys.stdout.write(record.pipeline_id + "\n")
    sys.stdout.flush()
    for step in record.steps.values():
        console.warn(f"step {step.name} ({step.kind}): job {step.job_id}")
    say_notes(specs, "prsctl", quiet=quiet)
    return True


def handle_status(spool: SpoolLayout, pid: str, as_json: bool) -> None:
    """``prsctl status PIPELINE``: JSON, or the pipeline's line and one line per step."""
    doc = read_pipeline_status(spool, pid)
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        return
    console.say(f"pipeline {pid} ({doc['name']}): {doc['state']}")
    if doc["reason"]:
        console.say(doc["reason"])
    for s in doc["steps"]:
        progress = ""
        if s.get("total_mbs"):
            done = (s.get("succeeded_mbs") or 0) + (s.get("failed_mbs") or 0)
            progress = f" {done}/{s['total_mbs']} mini-batches"
        why = f": {s['reason']}" if s["reason"] and s["state"] != "Completed" else ""
        console.say(f"  {s['step']} ({s['kind']}) {s['state']}{progress}{why}  [{s['job_id']}]")


def watch_pipeline(spool: SpoolLayout, pid: str, interval_s: float) -> int:
    """``prsctl status PIPELINE --watch``: a line each time a step moves, until the
    pipeline ends; then its view, and the pipeline's exit code (0, 42, 43)."""
    last = ""
    doc = read_pipeline_status(spool, pid)
    while doc["exit_code"] is None:
        line = _progress(doc)
        if line != last:
            console.say(line)
            last = line
        time.sleep(interval_s)
        doc = read_pipeline_status(spool, pid)
    handle_status(spool, pid, as_json=False)
    return int(doc["exit_code"])


def _progress(doc: dict[str, Any]) -> str:
    parts = []
    for s in doc["steps"]:
        done = (s.get("succeeded_mbs") or 0) + (s.get("failed_mbs") or 0)
        count = f" {done}/{s['total_mbs']}" if s.get("total_mbs") else ""
        parts.append(f"{s['step']} {s['state']}{count}")
    return f"pipeline {doc['pipeline_id']} {doc['state']}: " + "; ".join(parts)


def handle_cancel(spool: SpoolLayout, pid: str) -> None:
    """``prsctl cancel PIPELINE``: ask the leader to cancel running steps and skip the rest."""
    from prsd.read.fleet import fleet_warning, read_fleet

    if has_ended(spool, pid):
        console.say(f"pipeline {pid} already ended: {read_pipeline_status(spool, pid)['state']}")
        return
    PipelineFolder(spool, pid).ask_cancel()
    down = fleet_warning(read_fleet(spool, datetime.now(UTC)), f"cancel of pipeline {pid} asked")
    if down is not None and "leader" in down:
        console.say(
            f"{down}; nothing serves the pipeline now: its running steps are canceled and "
            "the rest skipped when a leader starts"
        )
        return
    console.say(f"pipeline {pid}: cancel asked; its running steps are canceled, the rest skipped")


def handle_retry(spool: SpoolLayout, pid: str, overrides: Sequence[str], name: str | None) -> None:
    """``prsctl retry PIPELINE``: :func:`retry_pipeline`, its new id printed."""
    new = retry_pipeline(spool, pid, overrides, name)
    sys.stdout.write(new.pipeline_id + "\n")


def retry_pipeline(
    spool: SpoolLayout, pid: str, overrides: Sequence[str], name: str | None
) -> PipelineRecord:
    """A new pipeline re-running ``pid``'s failed and skipped steps; its record.

    Completed steps are reused (their jobs' outputs are read in place).

    Raises:
        PrsdError: the pipeline has not ended, or nothing failed.
    """
    folder = spool.pipeline(pid).root
    if not has_ended(spool, pid):
        raise PrsdError(f"pipeline {pid} has not ended; retry it once it has")
    record = read_record(folder)
    views = step_views(PipelineFolder(spool, pid), record)
    reuse = {n: v.job_id for n, v in views.items() if v.state in SUCCEEDED}
    if len(reuse) == len(views):
        raise PrsdError(f"pipeline {pid}: every step completed; nothing to retry")
    new = submit_pipeline(
        folder / PIPELINE_FILE,
        spool,
        overrides=overrides,
        name=name or record.name,
        reuse=reuse,
        retry_of=pid,
        origin=Path(record.file).parent,
    )
    again = [n for n in new.steps if n not in reuse]
    console.warn(
        f"pipeline {pid}: steps to run again: {', '.join(again)}; reused: "
        + (", ".join(reuse) or "none")
    )
    return new
