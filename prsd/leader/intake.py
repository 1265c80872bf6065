"""Taking job folders in from ``inbox/``: the move, the spec, and a bad job's failure.

A folder in ``inbox/`` is complete when it holds ``job.yaml`` (or ``job.yml``):
``prsctl submit`` copies under a dot name and renames, and a folder written in place
by hand writes the job file last. The move into ``jobs/<id>/`` is one rename, so
of several leaders exactly one takes a job in. A job whose spec cannot be loaded
ends at once as Failed with the loader's one-line error in ``job_result.txt``; it
never stops the leader.
"""

from __future__ import annotations

import dataclasses
import json
import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from prsd.errors import ExitCode, JobSpecError, PrsdError
from prsd.jobspec.load import find_job_file, load_job_spec
from prsd.leader.finish import FinalState
from prsd.leader.readme import write_readme
from prsd.storage.atomic import move_verified, write_atomic
from prsd.storage.jobid import make_job_id
from prsd.storage.layout import JobLayout, SpoolLayout, valid_job_id

if TYPE_CHECKING:
    from prsd.jobspec import JobSpec


def ready_in_inbox(spool: SpoolLayout) -> list[str]:
    """Names of complete job folders waiting in the inbox."""
    try:
        entries = list(os.scandir(spool.inbox))
    except FileNotFoundError:
        return []
    ready = []
    for e in entries:
        if e.name.startswith(".") or not e.is_dir(follow_symlinks=False):
            continue
        if any(os.path.lexists(spool.inbox / e.name / n) for n in ("job.yaml", "job.yml")):
            ready.append(e.name)
    return sorted(ready)


def take_in(spool: SpoolLayout, name: str) -> JobLayout | None:
    """Move ``inbox/<name>`` to ``jobs/<id>``; None if another leader took it first."""
    job_id = name if valid_job_id(name) else make_job_id(name)
    layout = spool.job(job_id)
    if not move_verified(spool.inbox / name, layout.root):
        return None
    return layout


def load_taken_job(layout: JobLayout) -> JobSpec:
    """Load and record the spec of a job just taken in (writes ``spec.json``).

    Raises:
        JobSpecError: the spec cannot be run as written.
    """
    spec = load_job_spec(layout.root, spool_job_dir=layout.root)
    override = _name_override(layout)
    if override:
        spec = dataclasses.replace(spec, name=override)
    for d in layout.task_dirs():
        d.mkdir(parents=True, exist_ok=True)
    write_atomic(layout.spec, spec.to_json().encode())
    write_readme(layout)
    return spec


def fail_intake(layout: JobLayout, error: PrsdError) -> FinalState:
    """End a job that could not be taken in, saying exactly what to fix."""
    reason = error.one_line()
    if isinstance(error, JobSpecError) and not error.location:
        try:
            reason = f"{find_job_file(layout.root)}: {reason}"
        except JobSpecError:
            pass
    layout.logs.mkdir(parents=True, exist_ok=True)
    layout.state.mkdir(parents=True, exist_ok=True)
    write_readme(layout)
    text = f"Failed\nReason: {reason}\nThe job was not started: fix the job folder and submit it again.\n"
    write_atomic(layout.logs / "job_result.txt", text.encode())
    final = FinalState(
        "Failed", reason, int(ExitCode.JOB_FAILED), "", "", datetime.now(UTC).isoformat()
    )
    write_atomic(layout.final, final.to_json())
    status = {"schema": 1, "job_id": layout.job_id, "state": "Failed", "reason": reason}
    write_atomic(layout.status, json.dumps(status, indent=1).encode(), durable=False)
    return final


def _name_override(layout: JobLayout) -> str:
    try:
        origin = json.loads(layout.origin.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return ""
    name = origin.get("name", "") if isinstance(origin, dict) else ""
    return name if isinstance(name, str) else ""
