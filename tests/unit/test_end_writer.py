"""The one end-of-job writer: its order, seen by a real file-system watch, and its callers.

Whoever ends a job (intake refusing it, the job boundary after a fault, the driver at
the job's end: tests/integration/test_end_order.py) writes the texts, then the status,
then the final record, and removes ``active/<job>`` after them all. The order is read
from the kernel's inotify events (each atomic write is one rename into place).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from prsd.errors import JobSpecError
from prsd.leader.end.guard import end_broken_job
from prsd.leader.intake.intake import fail_intake
from prsd.spool.endrecords import ended_status, final_record
from prsd.spool.finalrecord import FinalState
from prsd.spool.jobfolder import JobFolder
from prsd.spool.layout import JobLayout, SpoolLayout
from prsd.spool.states import JobState
from tests.fswatch import Watch

if TYPE_CHECKING:
    from pathlib import Path

ENDING = (
    "job_error.txt",
    "error.txt",
    "job_result.txt",
    "status.private.json",
    "status.json",
    "final.private.json",
    "final.json",
)


def _job(tmp_path: Path) -> tuple[SpoolLayout, JobLayout]:
    spool = SpoolLayout(tmp_path / "spool")
    layout = spool.job("job-1")
    for folder in (layout.logs / "user", layout.state, spool.active):
        folder.mkdir(parents=True)
    (spool.active / "job-1").write_bytes(b"")
    (layout.root / "job.yaml").write_text("name: x\n")
    return spool, layout


def _watch(spool: SpoolLayout, layout: JobLayout) -> Watch:
    watch = Watch()
    for folder in (layout.logs, layout.logs / "user", layout.state, spool.active):
        watch.add(folder)
    return watch


def _order(watch: Watch) -> list[str]:
    """The ending's renames, then ``-active`` where the marker was removed."""
    out = []
    for kind, folder, name in watch.read():
        if kind == "moved" and name in ENDING:
            out.append(name)
        elif kind == "deleted" and folder.name == "active":
            out.append("-active")
    return out


def _final(layout: JobLayout) -> dict[str, object]:
    doc: dict[str, object] = json.loads((layout.state / "final.private.json").read_bytes())
    return doc


def test_end_writes_the_texts_then_the_status_then_the_final_record_then_active(
    tmp_path: Path,
) -> None:
    spool, layout = _job(tmp_path)
    tree = layout.log_tree
    final = final_record(JobState.FAILED, "it broke", root_cause="Traceback ...")
    watch = _watch(spool, layout)
    texts = [(tree.job_error, b"e\n"), (tree.user_error, b"e\n"), (tree.job_result, b"Failed\n")]
    JobFolder(spool, "job-1").end(final, ended_status("job-1", final), texts)
    assert _order(watch) == [*ENDING, "-active"]
    assert FinalState.from_json(layout.final.read_bytes()).reason == ""  # the public copy
    assert _final(layout)["reason"] == "it broke"
    status = json.loads(layout.status.read_bytes())
    assert (status["state"], status["reason"], status["text_private"]) == ("Failed", "", True)
    assert json.loads((layout.state / "status.private.json").read_bytes())["reason"] == "it broke"


def test_end_with_a_fenced_status_writes_no_status(tmp_path: Path) -> None:
    spool, layout = _job(tmp_path)
    final = final_record(JobState.COMPLETED, "")
    watch = _watch(spool, layout)
    JobFolder(spool, "job-1").end(final, None, [(layout.log_tree.job_result, b"Completed\n")])
    assert _order(watch) == ["job_result.txt", "final.private.json", "final.json", "-active"]


def test_end_stops_at_the_first_error_so_no_final_record_claims_a_complete_end(
    tmp_path: Path,
) -> None:
    spool, layout = _job(tmp_path)
    (layout.logs / "user").rmdir()
    (layout.logs / "user").write_bytes(b"a file where a folder is expected")
    final = final_record(JobState.FAILED, "x")
    with pytest.raises(OSError):
        JobFolder(spool, "job-1").end(
            final, ended_status("job-1", final), [(layout.log_tree.user_error, b"e\n")]
        )
    assert not layout.final.exists()
    assert not layout.status.exists()
    assert (spool.active / "job-1").exists()


def test_end_never_creates_a_job_folder_that_is_gone(tmp_path: Path) -> None:
    spool, layout = _job(tmp_path)
    for path in sorted(layout.root.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    layout.root.rmdir()
    failed: list[Path] = []
    final = final_record(JobState.FAILED, "x")
    JobFolder(spool, "job-1").end(
        final,
        ended_status("job-1", final),
        [(layout.log_tree.job_result, b"Failed\n")],
        on_error=lambda path, exc: failed.append(path),
    )
    assert not layout.root.exists()
    assert failed == [layout.log_tree.job_result, layout.status, layout.final]
    assert not (spool.active / "job-1").exists()  # no leader meets the job again


def test_intake_refusal_ends_the_job_complete_with_the_final_record_last(tmp_path: Path) -> None:
    spool, layout = _job(tmp_path)
    watch = _watch(spool, layout)
    final = fail_intake(layout, JobSpecError("mini_batch_size", "", "not a size"))
    assert _order(watch) == ["job_result.txt", "status.private.json", "status.json"] + [
        "final.private.json",
        "final.json",
        "-active",
    ]
    assert final.state == "Failed" and final.exit_code == 42
    assert final.reason.endswith("mini_batch_size: not a size")
    assert "job.yaml" in final.reason  # the file to fix is named
    assert _final(layout)["reason"] == final.reason
    status = json.loads(layout.status.read_bytes())
    assert (status["job_id"], status["state"]) == ("job-1", "Failed")
    assert final.reason in layout.log_tree.job_result.read_text()
    assert (layout.logs / "readme.txt").exists()


def test_fault_ends_the_job_complete_with_the_final_record_last(tmp_path: Path) -> None:
    spool, layout = _job(tmp_path)
    watch = _watch(spool, layout)
    final = end_broken_job(spool, layout, "system error while serving the job: boom")
    assert _order(watch) == ["job_result.txt", *ENDING[:2], *ENDING[3:], "-active"]
    assert (final.state, final.exit_code) == ("Failed", 42)
    assert _final(layout)["root_cause"] == "system error while serving the job: boom"
    assert "boom" in layout.log_tree.user_error.read_text()
    assert "boom" in layout.log_tree.job_result.read_text()
    status = json.loads(layout.status.read_bytes())
    assert (status["job_id"], status["state"]) == ("job-1", "Failed")


def test_fault_keeps_the_drivers_own_error_text(tmp_path: Path) -> None:
    spool, layout = _job(tmp_path)
    layout.log_tree.job_error.write_text("the driver's summary\n")
    watch = _watch(spool, layout)
    end_broken_job(spool, layout, "boom")
    assert _order(watch) == [*ENDING[2:], "-active"]
    assert layout.log_tree.job_error.read_text() == "the driver's summary\n"


def test_fault_in_a_job_folder_that_is_gone_raises_nothing_and_writes_nothing(
    tmp_path: Path,
) -> None:
    spool = SpoolLayout(tmp_path / "spool")
    spool.active.mkdir(parents=True)
    (spool.active / "job-2").write_bytes(b"")
    final = end_broken_job(spool, spool.job("job-2"), "gone")
    assert final.state == "Failed"
    assert not spool.job("job-2").root.exists()
    assert not (spool.active / "job-2").exists()
