"""``pipelines/<id>/pipeline.json``: what the submitter wrote, read back with care.

Guarantees: the record is read without following a link and within a size, and every
name in it is checked (step names, job ids, dependencies on known steps) before the
leader acts on it, so a user who rewrites their own record can only break their own
pipeline. :func:`pipelines_folder` makes ``pipelines/`` (1777, like ``requests/``).
:func:`read_pipeline_json` answers a pipeline's ``pipeline.json`` or ``final.json`` as
written, unchecked, for the SDK layers that show it (None while it cannot be read).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prsd.spool.badrecord import BadRecord
from prsd.spool.layout import valid_job_id
from prsd.spool.pipelinelayout import PIPELINE_RECORD
from prsd.spool.readsafe import UntrustedFile, read_small

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.layout import SpoolLayout

__all__ = [
    "MAX_RECORD_BYTES",
    "BadRecord",
    "PipelineRecord",
    "StepRecord",
    "parse_record",
    "pipeline_ids",
    "pipelines_folder",
    "read_record",
]
MAX_RECORD_BYTES = 1 << 20
_STEP = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")


@dataclass(frozen=True)
class StepRecord:
    """One step as submitted: its kind, its job's id, the steps it reads from."""

    name: str
    kind: str
    job_id: str
    deps: tuple[str, ...] = ()
    reused: bool = False  # a completed step of an earlier run (prsctl retry)


@dataclass(frozen=True)
class PipelineRecord:
    """The submitted pipeline (see the module docstring)."""

    pipeline_id: str
    name: str
    file: str
    steps: dict[str, StepRecord]
    continue_on_step_failure: bool = False
    ignored: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()
    retry_of: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> bytes:
        steps = {
            n: {"kind": s.kind, "job_id": s.job_id, "deps": list(s.deps), "reused": s.reused}
            for n, s in self.steps.items()
        }
        doc = {
            "schema": 1,
            "pipeline_id": self.pipeline_id,
            "name": self.name,
            "file": self.file,
            "steps": steps,
            "continue_on_step_failure": self.continue_on_step_failure,
            "ignored": list(self.ignored),
            "notes": list(self.notes),
            "overrides": list(self.overrides),
            "retry_of": self.retry_of,
        }
        return json.dumps(doc, indent=1).encode()

    def deps(self) -> dict[str, tuple[str, ...]]:
        return {n: s.deps for n, s in self.steps.items()}


def parse_record(raw: bytes) -> PipelineRecord:
    """Read back :meth:`PipelineRecord.to_json`, checking every name.

    Raises:
        BadRecord: not such a record.
    """
    try:
        doc = json.loads(raw)
        steps = {}
        for name, s in doc["steps"].items():
            deps = tuple(str(d) for d in s["deps"])
            step = StepRecord(name, str(s["kind"]), str(s["job_id"]), deps, bool(s["reused"]))
            steps[name] = step
        record = PipelineRecord(
            str(doc["pipeline_id"]),
            str(doc["name"]),
            str(doc["file"]),
            steps,
            bool(doc["continue_on_step_failure"]),
            tuple(str(i) for i in doc["ignored"]),
            tuple(str(i) for i in doc["notes"]),
            tuple(str(i) for i in doc["overrides"]),
            str(doc.get("retry_of", "")),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BadRecord(f"not a pipeline record: {exc}") from None
    for step in record.steps.values():
        if not _STEP.match(step.name) or not valid_job_id(step.job_id):
            raise BadRecord(f"step {step.name!r}: a bad step name or job id")
        if step.kind not in ("command", "parallel"):
            raise BadRecord(f"step {step.name!r}: kind {step.kind!r}")
        if any(d not in record.steps for d in step.deps):
            raise BadRecord(f"step {step.name!r}: depends on an unknown step")
    return record


def read_record(folder: Path) -> PipelineRecord:
    """The record of the pipeline in ``folder``.

    Raises:
        BadRecord: missing, a link, too large, or malformed.
    """
    try:
        raw = read_small(folder / PIPELINE_RECORD, MAX_RECORD_BYTES, daemon_owned=False)
    except (OSError, UntrustedFile) as exc:
        raise BadRecord(f"cannot read {folder / PIPELINE_RECORD}: {exc}") from None
    return parse_record(raw)


def read_pipeline_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in a pipeline's ``path`` (``pipeline.json``, ``final.json``) as
    written; None while it is absent, half-written, unreadable or not an object."""
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def pipelines_folder(spool: SpoolLayout) -> Path:
    """``<spool>/pipelines``, made 1777 (every user submits, none removes another's)."""
    folder = spool.pipelines
    try:
        folder.mkdir()
    except FileExistsError:
        return folder
    except PermissionError:
        return folder  # the daemons make it
    os.chmod(folder, 0o1777)
    return folder


def pipeline_ids(spool: SpoolLayout) -> list[str]:
    """Ids of the pipelines in the spool (submitted folders), sorted."""
    try:
        names = os.listdir(spool.pipelines)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if not n.startswith(".") and valid_job_id(n))
