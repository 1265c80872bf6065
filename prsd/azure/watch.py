"""Reading a submitted pipeline back from the spool: states in Azure's words, new log lines.

Guarantees: :func:`azure_status` maps prsd's step and pipeline states to v1 run
statuses (``NotStarted``, ``Queued``, ``Running``, ``Finished``, ``Failed``,
``Canceled``) and :func:`v2_status` to v2 job statuses (``Completed`` for
``Finished``); :class:`Tail` returns only the lines appended to a step's progress
files since it last looked, whole lines only, and :class:`BuildTail` a line each time
a node's environment build reaches a new phase (and every ``BUILD_EVERY_S`` while it
stays in one), in :func:`prsd.spool.nodereport.environment_line`'s words;
:func:`step_states` reads every step's prsd state. Nothing here writes to the spool. Both SDK layers (compat/azureml-v1 and
:mod:`prsd.azure`) read runs through this module.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

_STATUS = {
    "Waiting": "NotStarted",
    "Queued": "Queued",
    "Running": "Running",
    "Completed": "Finished",
    "Completed with failures": "Finished",
    "Failed": "Failed",
    "Canceled": "Canceled",
    "Lost": "Failed",
    "Skipped": "NotStarted",
}
ENDED = frozenset({"Finished", "Failed", "Canceled"})
BUILD_EVERY_S = 30.0


def azure_status(prsd_state: str) -> str:
    """A v1 run status for a prsd state (unknown states read as ``Running``)."""
    return _STATUS.get(prsd_state, "Running")


def v2_status(prsd_state: str) -> str:
    """A v2 job status (``Completed`` where v1 says ``Finished``)."""
    status = azure_status(prsd_state)
    return "Completed" if status == "Finished" else status


def step_states(spool: Path, folder: Path) -> dict[str, tuple[str, str]]:
    """Each step's (prsd state, reason) of the pipeline in ``folder``; empty if unreadable."""
    return _step_states(_read_status(spool, folder))


def _read_status(spool: Path, folder: Path) -> dict[str, Any] | None:
    """The pipeline's document (prsd.read.pipelines); None if its record is unreadable."""
    from prsd.read.pipelines import read_pipeline_status
    from prsd.spool.layout import SpoolLayout

    try:
        return read_pipeline_status(SpoolLayout(spool), folder.name)
    except (OSError, ValueError):
        return None


def _step_states(doc: dict[str, Any] | None) -> dict[str, tuple[str, str]]:
    steps = doc["steps"] if doc is not None else []
    return {str(s["step"]): (str(s["state"]), str(s["reason"])) for s in steps}


def pipeline_status(spool: Path, folder: Path) -> str:
    """The pipeline's v1 status: its end, else ``NotStarted`` or ``Running`` from its steps."""
    doc = _read_status(spool, folder)
    if doc is not None and doc["exit_code"] is not None:
        return azure_status(str(doc["state"]))
    states = {azure_status(s) for s, _ in _step_states(doc).values()}
    return "NotStarted" if states <= {"NotStarted"} else "Running"


def step_tails(job_root: Path) -> list[Tail]:
    """Tails of a step job's environment builds, progress overview and command output
    (``std_log.txt``)."""
    from prsd.spool.layout import JobLayout

    job = JobLayout(job_root, job_root.name)
    tree = job.log_tree
    return [BuildTail(job.node_reports, "*.json"),
            Tail(tree.root, tree.pattern(tree.progress_overview("*"))),
            Tail(tree.root, tree.pattern(tree.std_log))]  # fmt: skip


def result_file(folder: Path) -> Path:
    """A pipeline's (or job's) ``job_result.txt``."""
    from prsd.wire.logtree import LogTree

    return LogTree.of_job(folder).job_result


def logs_folder(job_root: Path) -> Path:
    """A job's log tree."""
    from prsd.wire.logtree import LogTree

    return LogTree.of_job(job_root).root


def read_json(path: Path) -> dict[str, Any] | None:
    """A pipeline's ``pipeline.json`` or ``final.json``, or None while it is absent or
    half-written (read by the storage layer)."""
    from prsd.spool.pipelinerecord import read_pipeline_json

    return read_pipeline_json(path)


class Tail:
    """New whole lines of the files matching a glob in one folder."""

    def __init__(self, folder: Path, pattern: str) -> None:
        self.folder = folder
        self.pattern = pattern
        self.offsets: dict[Path, int] = {}

    def new_lines(self) -> list[str]:
        out: list[str] = []
        for path in sorted(self.folder.glob(self.pattern)) if self.folder.is_dir() else []:
            start = self.offsets.get(path, 0)
            try:
                with path.open("rb") as f:
                    f.seek(start)
                    chunk = f.read()
            except OSError:
                continue
            end = chunk.rfind(b"\n") + 1
            self.offsets[path] = start + end
            out.extend(chunk[:end].decode("utf-8", "replace").splitlines())
        return out


class BuildTail(Tail):
    """A line per node whose environment build moved to a new phase or failed, read from
    the nodes' reports (``jobs/<id>/nodes/<node>.json``); a build that stays in one phase
    is said again every ``every_s``."""

    def __init__(self, folder: Path, pattern: str, every_s: float = BUILD_EVERY_S) -> None:
        super().__init__(folder, pattern)
        self.every_s = every_s
        self.said: dict[str, tuple[str, float]] = {}

    def new_lines(self) -> list[str]:
        from prsd.spool.nodereport import NodeReport, environment_line

        out: list[str] = []
        now, clock = datetime.now(UTC), time.monotonic()
        for path in sorted(self.folder.glob(self.pattern)) if self.folder.is_dir() else []:
            try:
                report = NodeReport.decode(path.read_bytes())
            except (OSError, ValueError):  # torn or foreign: read again next time
                continue
            env = report.environment
            moved = f"{env.state} {env.phase}" if env else " "
            line = environment_line(report.environment, now)
            last = self.said.get(report.node_id)
            if not line or (last and last[0] == moved and clock - last[1] < self.every_s):
                continue
            if last and last[0] == moved and (env is None or env.state != "building"):
                continue  # a failure is said once
            self.said[report.node_id] = (moved, clock)
            out.append(f"node {report.node_id}: {line}")
        return out
