"""Which waiting steps a failure, a skip or a cancel skips, and why (pure); what the desk
never touches."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from prsd.pipeline.desk import PipelineDesk, plan_skips
from prsd.pipeline.view import StepView
from prsd.spool.jobowner import JobOwner, write_job_owner
from prsd.spool.opening import open_spool
from prsd.spool.pipelinerecord import PipelineRecord, StepRecord, parse_record, pipelines_folder

if TYPE_CHECKING:
    from pathlib import Path

DEPS = {"a": (), "b": ("a",), "c": ("b",), "d": (), "e": ("d",)}


def _record(go_on: bool) -> PipelineRecord:
    steps = {n: StepRecord(n, "command", f"p-{n}", d) for n, d in DEPS.items()}
    return PipelineRecord("p", "p", "/f.yml", steps, continue_on_step_failure=go_on)


def _views(**states: str) -> dict[str, StepView]:
    return {n: StepView(n, "command", f"p-{n}", states.get(n, "Waiting")) for n in DEPS}


def test_by_default_a_failure_skips_every_waiting_step() -> None:
    skips = plan_skips(_record(False), _views(a="Failed", d="Running"), canceled=False)
    why = "not run: step a ended Failed (settings.continue_on_step_failure is false)"
    assert skips == {"b": why, "c": why, "e": why}


def test_continuing_skips_only_what_depends_on_the_failure() -> None:
    skips = plan_skips(_record(True), _views(a="Failed", d="Running"), canceled=False)
    assert skips == {
        "b": "not run: it depends on step a, which ended Failed",
        "c": "not run: it depends on step a, which ended Failed",
    }
    later = plan_skips(_record(True), _views(a="Completed", b="Skipped"), canceled=False)
    assert later == {"c": "not run: it depends on step b, which ended Skipped"}


def test_nothing_failed_nothing_skipped_and_cancel_skips_all_waiting() -> None:
    assert plan_skips(_record(False), _views(a="Completed", d="Running"), canceled=False) == {}
    skips = plan_skips(_record(True), _views(a="Running"), canceled=True)
    assert set(skips) == {"b", "c", "d", "e"}
    assert set(skips.values()) == {"not run: the pipeline was canceled"}


def test_a_record_naming_unsafe_things_is_refused() -> None:
    good = _record(False).to_json()
    assert parse_record(good).steps["c"].deps == ("b",)
    for bad in (
        good.replace(b'"p-a"', b'"../etc"'),
        good.replace(b'"kind": "command"', b'"kind": "sweep"', 1),
        good.replace(b'"deps": [\n    "a"\n   ]', b'"deps": [\n    "zz"\n   ]', 1),
        b"[]",
    ):
        try:
            parse_record(bad)
        except ValueError:
            continue
        raise AssertionError(bad)


def test_a_record_naming_another_users_jobs_reads_and_cancels_nothing(tmp_path: Path) -> None:
    """The desk acts only on jobs the leader recorded for the pipeline folder's owner."""
    spool = open_spool(tmp_path / "spool")
    other = os.geteuid() + 4321
    for job_id, final in (("victim-run", None), ("victim-done", {"state": "Failed"})):
        job = spool.job(job_id)
        (job.root / "state").mkdir(parents=True)
        (job.root / "logs").mkdir()
        write_job_owner(job, JobOwner(other, other, "someone"))
        if final is not None:
            final["reason"] = "SECRET reason"
            job.final.write_text(json.dumps(final))
            (job.logs / "job_result.txt").write_text("Failed\nFirst error: SECRET line\n")
    steps = {
        "a": StepRecord("a", "command", "victim-run"),
        "b": StepRecord("b", "command", "victim-done"),
    }
    folder = pipelines_folder(spool) / "p-20261125-000000-abcd"
    folder.mkdir()
    record = PipelineRecord(folder.name, "p", "/f.yml", steps)
    (folder / "pipeline.json").write_bytes(record.to_json())
    (folder / "cancel").touch()
    PipelineDesk(spool).step(0.0, force=True)
    assert not spool.job("victim-run").cancel.exists()
    result = (folder / "logs" / "job_result.txt").read_text()
    assert "SECRET" not in result and "belongs to another user" in result
    assert json.loads((folder / "final.json").read_text())["state"] in ("Failed", "Canceled")


def test_the_desk_writes_nothing_through_a_link_the_user_planted(tmp_path: Path) -> None:
    spool = open_spool(tmp_path / "spool")
    outside = tmp_path / "outside"
    outside.mkdir()
    steps = {"a": StepRecord("a", "command", "gone-job")}  # ended: its job folder is gone
    folder = pipelines_folder(spool) / "p-20261125-000000-abcd"
    folder.mkdir()
    (folder / "pipeline.json").write_bytes(PipelineRecord(folder.name, "p", "/f", steps).to_json())
    (folder / "logs").symlink_to(outside)
    (folder / "final.json.tmp").symlink_to(outside / "x")
    PipelineDesk(spool).step(0.0, force=True)
    assert list(outside.iterdir()) == []
    assert not (folder / "final.json").exists()  # refused: logs/ is a link
    linked = pipelines_folder(spool) / "q-20261125-000000-abcd"
    linked.symlink_to(folder)
    (folder / "logs").unlink()
    PipelineDesk(spool).step(0.0, force=True)
    assert (folder / "final.json").exists() and (folder / "logs" / "job_result.txt").exists()
    assert json.loads((folder / "final.json").read_text())["state"] == "Failed"
    assert not (linked / "final.json").is_symlink() and list(outside.iterdir()) == []
