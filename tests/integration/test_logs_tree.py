"""Every file of docs/logs.md after a real job with a failure, holding what it should."""

from __future__ import annotations

import csv
import json
import re
from datetime import datetime
from typing import TYPE_CHECKING

import pytest

from prsd.agent import perfrows
from prsd.leader.run.joblogs import CSV_COLUMNS
from prsd.spool.statusfiles import merged_with_private_file
from prsd.spool.statusschema import validate_status
from tests.jobkit import RunResult, make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

NODE = "n1"
FILES = 15
RETRIES = 1

SCRIPT = """
    import sys, time
    from azureml_user.parallel_run import EntryScript

    def init():
        EntryScript().logger.info("init done")

    def run(mini_batch):
        time.sleep(0.2)
        print("scoring", len(mini_batch))
        sys.stderr.write("a warning on stderr\\n")
        for p in mini_batch:
            if p.endswith("item00007.txt"):
                raise ValueError("bad item 7")
        EntryScript().logger.info("scored %d", len(mini_batch))
        return [p for p in mini_batch]
"""

YAML = f"""
    name: tree
    input_data: ./data
    mini_batch_size: "1"
    resources: {{max_concurrency_per_instance: 2}}
    retry_settings: {{max_retries: {RETRIES}, timeout: 30}}
    resource_monitor_interval: 0.4
    task:
      code: ./code
      entry_script: score.py
      program_arguments: "--profiling_module cProfile"
      append_row_to: ./outputs/out.txt
"""


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    root = tmp_path_factory.mktemp("tree")
    r = run_prsd(make_job(root, SCRIPT, YAML, files=FILES), root / "spool", "--node-id", NODE)
    assert r.returncode == 0, r.stderr + r.stdout
    return r


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _header(path: Path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as f:
        return next(csv.reader(f))


def test_readme_describes_every_file(job: RunResult) -> None:
    """logs/readme.txt names every file of the tree and the perf columns."""
    text = (job.logs / "readme.txt").read_text()
    for name in (
        "job_progress_overview.<YYYYMMDD>.txt",
        "job_result.txt",
        "job_error.txt",
        "sys/master_role.txt",
        "sys/job_report/processed_mini-batches.csv",
        "sys/node/<node_id>/_main.txt",
        "sys/node/<node_id>/<process_name>.txt",
        "sys/node/<node_id>/<process_name>.profile",
        "sys/error/<node_id>/",
        "user/entry_script_log/<node_id>/<process_name>.log.txt",
        "user/stdout/<node_id>/<process_name>.stdout.txt",
        "user/stderr/<node_id>/<process_name>.stderr.txt",
        "user/error/<node_id>/<process_name>.txt",
        "user/error.txt",
        "node_resource_usage.csv",
        "processes_resource_usage.csv",
        "node_disk_usage.csv",
        "processes_<MM>",
    ):
        assert name in text, name
    for column in (*perfrows.NODE_COLUMNS, *perfrows.PROCESS_COLUMNS, *perfrows.DISK_COLUMNS):
        assert column in text, column


def test_attempt_report_counts_match_the_job(job: RunResult) -> None:
    """One CSV row per attempt: every mini-batch once succeeded, the bad one failed each try."""
    path = job.logs / "sys" / "job_report" / "processed_mini-batches.csv"
    assert tuple(_header(path)) == CSV_COLUMNS
    rows = _rows(path)
    failed = [r for r in rows if r["status"] == "failed"]
    assert [(r["mini_batch_id"], r["attempt"]) for r in failed] == [
        ("000000007", str(a)) for a in range(1, RETRIES + 2)
    ]
    ok = sorted(int(r["mini_batch_id"]) for r in rows if r["status"] == "succeeded")
    assert ok == [i for i in range(FILES) if i != 7]
    assert all(r["node_id"] == NODE and r["pid"].isdigit() for r in rows)
    assert all(float(r["run_method_s"]) >= 0.2 for r in rows if r["status"] == "succeeded")
    assert all("ValueError: bad item 7" in r["error"] for r in failed)


def test_overview_result_and_leader_view(job: RunResult) -> None:
    """Progress lines in Azure's wording, the result, and the leader's view."""
    overviews = sorted(job.logs.glob("job_progress_overview.*.txt"))
    assert overviews and re.fullmatch(r"job_progress_overview\.\d{8}\.txt", overviews[0].name)
    lines = "".join(p.read_text() for p in overviews).splitlines()
    for line in lines:
        stamp, _ = line.split(" ", 1)
        datetime.fromisoformat(stamp)
    text = "\n".join(lines)
    assert f"Scheduling finished. Scheduled {FILES} mini batches" in text
    assert f"Processed {FILES} of {FILES} mini batches in" in text
    assert "The job is completed with failures. 1 of" in lines[-1]
    result = job.result_text()
    assert result.startswith("Completed with failures")
    assert f"{FILES - 1} succeeded, 1 failed" in result
    master = (job.logs / "sys" / "master_role.txt").read_text()
    assert f"job {job.job_id} taken in" in master
    assert "job Completed" in master
    assert f"progress: Scheduling finished. Scheduled {FILES} mini batches" in master


def test_error_summaries_group_identical_errors(job: RunResult) -> None:
    """job_error.txt and user/error.txt: the cause, the first error, one counted line."""
    expected = (
        f"{RETRIES + 1} x [failed] ValueError: bad item 7 (first: mini-batch 000000007 "
        f"(attempt 1) on node {NODE}, process"
    )
    reason = job.result_text().splitlines()[1].removeprefix("Reason: ")
    for path in (job.logs / "job_error.txt", job.logs / "user" / "error.txt"):
        lines = path.read_text().splitlines()
        assert lines[0] == reason
        assert lines[1].startswith("First error: mini-batch 000000007 (attempt 1)"), lines
        counted = [line for line in lines if " x [" in line]
        assert len(counted) == 1 and counted[0].startswith(expected), lines
        assert "Poison items" not in path.read_text()
    tracebacks = "".join(p.read_text() for p in (job.logs / "user" / "error" / NODE).glob("*.txt"))
    assert tracebacks.count('raise ValueError("bad item 7")') == RETRIES + 1


def test_node_logs_have_one_record_per_mini_batch(job: RunResult) -> None:
    """sys/node/<node>/<process>.txt: a record per attempt that ran, with every field."""
    node_dir = job.logs / "sys" / "node" / NODE
    records = [
        line for p in sorted(node_dir.glob("process*.txt")) for line in p.read_text().splitlines()
    ]
    assert len(records) == (FILES - 1) + (RETRIES + 1)
    fields = ("ip=", "pid=", "items=1", "succeeded=", "failed=", "start=", "elapsed_s=")
    for rec in records:
        assert all(f in rec for f in (*fields, "process_time_s=", "run_method_s=")), rec
    main = (node_dir / "_main.txt").read_text()
    assert "process000 started (pid" in main
    assert "process000 exits with returncode 0" in main
    assert re.search(r"resource monitor: \d+ samples every 0.4 s; [\d.]+ ms CPU", main)
    assert sorted(p.name for p in node_dir.glob("*.profile")) == [
        "process000.profile",
        "process001.profile",
    ]


def test_user_logs_of_every_worker(job: RunResult) -> None:
    """EntryScript log, stdout and stderr of each worker hold what the script wrote."""
    user = job.logs / "user"
    for proc in ("process000", "process001"):
        assert "init done" in (user / "entry_script_log" / NODE / f"{proc}.log.txt").read_text()
        assert "scoring 1" in (user / "stdout" / NODE / f"{proc}.stdout.txt").read_text()
        assert "a warning on stderr" in (user / "stderr" / NODE / f"{proc}.stderr.txt").read_text()


def test_perf_files_hold_samples(job: RunResult) -> None:
    """The resource monitor's CSVs parse, with Azure's columns first and the workers' rows."""
    perf = job.logs / "perf" / NODE
    node_rows = _rows(perf / "node_resource_usage.csv")
    assert _header(perf / "node_resource_usage.csv")[:12] == list(perfrows.NODE_COLUMNS)
    assert len(node_rows) >= 3  # start, at least one while running, end
    for row in node_rows:
        assert 0 <= float(row["Cpu Percent"]) <= 100 * 64
        assert float(row["Memory Total (MB)"]) > float(row["Memory Available (MB)"]) > 0
    procs = _rows(perf / "processes_resource_usage.csv")
    assert tuple(_header(perf / "processes_resource_usage.csv")) == perfrows.PROCESS_COLUMNS
    assert {"process000", "process001"} <= {r["Process Name"] for r in procs}
    assert all(float(r["Memory Rss (MB)"]) > 1 for r in procs)
    disks = _rows(perf / "node_disk_usage.csv")
    assert disks and all(float(d["Total (MB)"]) > 0 for d in disks)
    snaps = list((perf / "os").glob("*/processes_*"))
    assert snaps and all(re.fullmatch(r"\d{10}", s.parent.name) for s in snaps)
    assert "COMMAND" in snaps[0].read_text()


def test_status_document_is_valid_and_final(job: RunResult) -> None:
    """state/status.json matches its schema and the job's counts."""
    public = json.loads((job.job / "state" / "status.json").read_text())
    assert validate_status(public) == []
    assert public["errors"] == [] and public["text_private"], "error text is the owner's only"
    doc = merged_with_private_file(public, job.job / "state")
    assert (doc["state"], doc["total_mbs"], doc["failed_mbs"]) == (
        "Completed with failures",
        FILES,
        1,
    )
    assert doc["succeeded_mbs"] == FILES - 1
    assert doc["errors"][0]["count"] == RETRIES + 1
    assert [e["mini_batch"] for e in doc["last_errors"]] == ["000000007"] * (RETRIES + 1)
    assert doc["nodes"][0]["node_id"] == NODE


def test_poison_items_found_by_bisection_are_listed(tmp_path: Path) -> None:
    """With bisection on, user/error.txt names the one input that fails its mini-batch."""
    script = """
        def run(mini_batch):
            if any(p.endswith("item00005.txt") for p in mini_batch):
                raise ValueError("item 5 is poison")
            return list(mini_batch)
    """
    yaml = """
        name: poison
        input_data: ./data
        mini_batch_size: "4"
        resources: {max_concurrency_per_instance: 2}
        retry_settings: {max_retries: 0, timeout: 30}
        bisect_failed_mini_batches: true
        task:
          code: ./code
          entry_script: score.py
    """
    r = run_prsd(make_job(tmp_path, script, yaml, files=8), tmp_path / "spool", "--node-id", NODE)
    assert r.returncode == 0, r.stderr + r.stdout
    lines = (r.logs / "user" / "error.txt").read_text().splitlines()
    assert any(line.startswith("1 x [failed] ValueError: item 5 is poison") for line in lines)
    at = lines.index("Poison items (1), isolated by bisection:")
    (item,) = lines[at + 1 :]
    assert item.strip().startswith(
        str(r.job.parent.parent.parent / "job" / "data" / "item00005.txt")
    )
    assert "(mini-batch 000000001): ValueError: item 5 is poison" in item
