"""The read API (prsd/read/) over real spool folders: jobs, a pipeline, the fleet."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from prsd.read.fleet import fleet_warning, read_fleet
from prsd.read.jobs import job_ids, read_job_status, read_job_statuses, resolve_job
from prsd.read.pipelines import has_ended, read_pipeline_status, readable_pipelines
from prsd.spool.atomic import write_atomic
from prsd.spool.finalrecord import FinalState
from prsd.spool.jobid import make_job_id
from prsd.spool.jobowner import JobOwner, write_job_owner
from prsd.spool.opening import open_spool
from prsd.spool.pipelinerecord import PipelineRecord, StepRecord, pipelines_folder

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.layout import JobLayout


def _status(layout: JobLayout, **fields: object) -> None:
    layout.state.mkdir(parents=True, exist_ok=True)
    doc = {"schema": 1, "job_id": layout.job_id, "reason": "", **fields}
    write_atomic(layout.status, json.dumps(doc).encode())


def test_a_job_read_from_the_inbox_to_its_end(tmp_path: Path) -> None:
    """Queued in the inbox, Starting once taken in, then its summary, then its end."""
    spool = open_spool(tmp_path / "spool")
    job_id = make_job_id("read")
    spool.queued(job_id).mkdir()
    assert read_job_status(spool, job_id)["state"] == "Queued"
    assert job_ids(spool) == [job_id]
    assert resolve_job(spool, "last") == job_id

    spool.queued(job_id).rmdir()
    layout = spool.job(job_id)
    layout.root.mkdir()
    assert read_job_status(spool, job_id)["state"] == "Starting"

    _status(layout, state="Running", succeeded_mbs=2, total_mbs=5)
    doc = read_job_status(spool, job_id)
    assert (doc["state"], doc["succeeded_mbs"], doc["total_mbs"]) == ("Running", 2, 5)

    end = FinalState("Completed", "", 0, "", "", "2026-01-01T00:00:00+00:00", {})
    write_atomic(layout.final, end.to_json())
    assert read_job_status(spool, job_id)["state"] == "Completed"  # the end beats the summary
    assert [d["job_id"] for d in read_job_statuses(spool)] == [job_id]


def test_a_pipeline_read_from_its_record_its_steps_and_its_end(tmp_path: Path) -> None:
    spool = open_spool(tmp_path / "spool")
    pipelines_folder(spool)
    pipeline = spool.pipeline("p1")
    pipeline.step("b").mkdir(parents=True)  # b waits for a
    steps = {
        "a": StepRecord("a", "command", "p1-a", ()),
        "b": StepRecord("b", "command", "p1-b", ("a",)),
    }
    write_atomic(pipeline.record, PipelineRecord("p1", "pipe", "/f.yml", steps).to_json())
    job = spool.job("p1-a")
    job.root.mkdir()
    write_job_owner(job, JobOwner(os.getuid(), os.getgid(), "me"))
    _status(
        job, state="Running", succeeded_mbs=3, total_mbs=10, started_at="2026-01-01T00:00:00+00:00"
    )

    doc = read_pipeline_status(spool, "p1")
    assert (doc["state"], doc["exit_code"], doc["name"]) == ("Running", None, "pipe")
    a, b = doc["steps"]
    assert (a["step"], a["state"], a["succeeded_mbs"], a["total_mbs"]) == ("a", "Running", 3, 10)
    assert (b["step"], b["state"], b["depends_on"]) == ("b", "Waiting", ["a"])
    assert readable_pipelines(spool) == ["p1"]
    assert not has_ended(spool, "p1")

    write_atomic(pipeline.final, b'{"state": "Failed", "reason": "not a whole record"}')
    doc = read_pipeline_status(spool, "p1")  # a final.json that is no final record: not ended
    assert (doc["state"], doc["reason"], doc["exit_code"]) == ("Running", "", None)
    final = FinalState("Failed", "step a failed", 42, "", "", "2026-01-01T00:01:00+00:00")
    write_atomic(pipeline.final, final.to_json())
    doc = read_pipeline_status(spool, "p1")
    assert (doc["state"], doc["reason"], doc["exit_code"]) == ("Failed", "step a failed", 42)
    assert doc["elapsed_s"] == 60.0  # from the first step's start to the pipeline's end
    assert has_ended(spool, "p1")

    shutil.rmtree(pipeline.root)
    assert readable_pipelines(spool) == []


def test_a_spool_no_daemon_ever_served(tmp_path: Path) -> None:
    spool = open_spool(tmp_path / "spool")
    fleet = read_fleet(spool, datetime.now(UTC))
    assert (fleet.leader_age_s, fleet.agents_alive, fleet.agent_age_s) == (None, 0, None)
    warning = fleet_warning(fleet, "queued")
    assert warning is not None
    assert warning.startswith("queued: no leader has ever run on this spool")
