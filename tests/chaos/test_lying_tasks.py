"""Task files that lie are voided and planned again, never a job failure or a lost row.

Pending task files are edited on the spool before any agent claims them: one names no
mini-batch (``"mbs": []``), one lost a path of its first mini-batch (its checksum no
longer matches), one lost a path and its checksum (a task file of the previous format:
``n`` no longer matches the paths). The agent voids each, the leader plans their
mini-batches again from the input, and the job completes with exact output.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from prsd.spool.atomic import write_atomic
from tests.chaos.faultkit import (
    daemon_log,
    expected_lines,
    job_dir,
    make_files_job,
    output_lines,
    wait_final,
)
from tests.helpers import wait_until

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from tests.fleet import Fleet


def _pending(fleet: Fleet, job_id: str) -> list[Path]:
    root = job_dir(fleet, job_id) / "tasks" / "pending"
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


def _no_mini_batches(obj: dict[str, Any]) -> None:
    obj["mbs"] = []
    obj.pop("sum", None)


def _one_path_less(obj: dict[str, Any]) -> None:
    obj["mbs"][0]["p"].pop()  # "n" and "sum" stay as they were


def _one_path_less_old_format(obj: dict[str, Any]) -> None:
    _one_path_less(obj)
    obj.pop("sum", None)


def _edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Rewrite a pending task file through a rename in its own folder (as a hand edit)."""
    obj = json.loads(path.read_bytes())
    change(obj)
    write_atomic(path, json.dumps(obj).encode())


@pytest.mark.timeout(240)
def test_lying_task_files_are_planned_again(tmp_path: Path, fleet: Fleet) -> None:
    """Three edited task files: voided, planned again; Completed with every row once."""
    fleet.leader()
    job_id = fleet.submit(make_files_job(tmp_path, "lying", 40, size=4))
    wait_until(lambda: len(_pending(fleet, job_id)) >= 10, 60, "the job's tasks")
    tasks = _pending(fleet, job_id)
    _edit(tasks[0], _no_mini_batches)
    _edit(tasks[1], _one_path_less)
    _edit(tasks[2], _one_path_less_old_format)
    fleet.agent("n1", "--slots", "2")
    final = wait_final(fleet, job_id, 180)
    assert final["state"] == "Completed", final
    assert output_lines(fleet, job_id) == expected_lines(40)
    errors = (job_dir(fleet, job_id) / "logs" / "sys" / "error" / "n1").rglob("*")
    text = "".join(p.read_text(encoding="utf-8") for p in errors if p.is_file())
    assert "names no mini-batch" in text, text
    assert "does not match its checksum" in text, text
    assert "lists 3 items, not its n = 4" in text, text
    assert "Traceback" not in daemon_log(fleet, "leader")
