"""``prsctl`` against real spools: real jobs, real daemons, a real pseudo-terminal."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pty
import select
import subprocess
import sys
import time
from contextlib import redirect_stdout
from typing import TYPE_CHECKING

import pytest

from prsd.cli.logmerge import line_time
from prsd.cli.prsctl import main as prsctl_main
from prsd.spool.statusschema import validate_status
from tests.helpers import wait_until
from tests.jobkit import PRSD, RunResult, make_job, prsctl, run_prsd

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

PRSCTL = [sys.executable, "-m", "prsd.cli.prsctl"]
NODE = "n1"

FLAKY = """
    import os
    def run(mini_batch):
        for p in mini_batch:
            if p.endswith("item00004.txt") and os.path.exists(os.environ["BREAK"]):
                raise ValueError("item 4 is broken")
        return [os.path.basename(p) for p in mini_batch]
"""

SLOW = """
    import time
    def run(mini_batch):
        time.sleep({sleep_s})
        return list(mini_batch)
"""


def _yaml(extra: str = "", workers: int = 2) -> str:
    return f"""
        name: ctl
        input_data: ./data
        mini_batch_size: "2"
        resources: {{max_concurrency_per_instance: {workers}}}
        retry_settings: {{max_retries: 1, timeout: 60}}
        task:
          code: ./code
          entry_script: score.py
          append_row_to: ./outputs/out.txt
          {extra}
    """


def ctl(spool: Path, *args: str, timeout_s: float = 30) -> subprocess.CompletedProcess[str]:
    return prsctl(spool, *args, timeout_s=timeout_s)


@pytest.fixture(scope="module")
def flaky(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    """A completed job whose mini-batch 2 (item 4) failed on every try."""
    root = tmp_path_factory.mktemp("flaky")
    mark = root / "broken"
    mark.touch()
    env = f"environment_variables: {{BREAK: {mark}}}"
    job = make_job(root, FLAKY, _yaml(env), files=10)
    r = run_prsd(job, root / "spool", "--node-id", NODE)
    assert r.returncode == 0, r.stderr + r.stdout
    return r


@contextlib.contextmanager
def daemons(spool: Path) -> Iterator[None]:
    """A leader and an agent on ``spool`` as real processes, killed and reaped at the end."""
    procs = [
        subprocess.Popen([*PRSD, "leader", "--spool", str(spool)], stderr=subprocess.DEVNULL),
        subprocess.Popen(
            [*PRSD, "agent", "--spool", str(spool), "--node-id", NODE],
            stderr=subprocess.DEVNULL,
        ),
    ]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _state(spool: Path, job_id: str) -> str:
    doc = json.loads(ctl(spool, "status", job_id, "--json").stdout)
    return str(doc["state"])


def test_status_table_and_json(flaky: RunResult) -> None:
    """The jobs table and both JSON forms, valid against the schema."""
    table = ctl(flaky.spool, "status")
    assert table.returncode == 0, table.stderr
    header, row = table.stdout.splitlines()[:2]
    assert header.split() == ["JOB", "STATE", "DONE", "TOTAL", "FAILED", "RATE/s", "ELAPSED", "ETA"]
    assert row.split()[1:7] == ["Completed", "with", "failures", "5", "5", "1"]
    one = json.loads(ctl(flaky.spool, "status", flaky.job_id, "--json").stdout)
    assert validate_status(one) == []
    assert (one["job_id"], one["failed_mbs"], one["succeeded_items"]) == (flaky.job_id, 1, 8)
    many = json.loads(ctl(flaky.spool, "status", "--json").stdout)
    assert many["schema"] == 1 and [d["job_id"] for d in many["jobs"]] == [flaky.job_id]
    view = ctl(flaky.spool, "status", "last").stdout
    assert "5 of 5 mini-batches 100.0%" in view
    assert "First error: mini-batch 000000002 (attempt 1)" in view
    assert "2 x [failed] ValueError: item 4 is broken" in view


def test_logs_views_pick_the_right_files_in_time_order(flaky: RunResult) -> None:
    """The default, --errors, --node and --process views, each ordered by time."""
    default = ctl(flaky.spool, "logs", flaky.job_id).stdout.splitlines()
    assert {ln.split(" ", 1)[0] for ln in default} == {
        "[overview]",
        "[leader]",
        f"[{NODE}/_main]",
        "[result]",
    }
    assert default[-1].startswith("[result]")
    times = [t for ln in default if (t := line_time(ln.split(" ", 1)[1])) is not None]
    assert times == sorted(times)
    errors = ctl(flaky.spool, "logs", flaky.job_id, "--errors").stdout
    assert errors.startswith("[job_error] ")
    assert "[job_error] 2 x [failed] ValueError: item 4 is broken" in errors
    per_worker = [ln for ln in errors.splitlines() if not ln.startswith("[job_error]")]
    assert "\n".join(per_worker).count("raise ValueError") == 2
    node = ctl(flaky.spool, "logs", flaky.job_id, "--node", NODE).stdout
    assert node.count("mini-batch 000000002 failed") == 2
    assert f"[{NODE}/_main]" in node and "[overview]" not in node
    name = next(r["process_name"] for r in flaky.report() if r["status"] == "failed")
    proc = ctl(flaky.spool, "logs", flaky.job_id, "--process", name).stdout.splitlines()
    assert all(ln.startswith(f"[{NODE}/{name}") for ln in proc)
    assert any(ln.startswith(f"[{NODE}/{name} error] Traceback") for ln in proc)
    assert any(ln.startswith(f"[{NODE}/{name}] ") and "000000002 failed" in ln for ln in proc)
    bad = ctl(flaky.spool, "logs", flaky.job_id, "--process", "../x")
    assert bad.returncode == 2 and "processNNN" in bad.stderr


def test_nodes_lists_the_agent(flaky: RunResult) -> None:
    """The agent's heartbeat: slots, GPUs and its age."""
    out = json.loads(ctl(flaky.spool, "nodes", "--json").stdout)
    (node,) = out["nodes"]
    assert node["node_id"] == NODE and node["slots"] >= 1 and node["gpus"] == 0
    assert node["heartbeat_age_s"] is not None and node["heartbeat_age_s"] < 600
    assert NODE in ctl(flaky.spool, "nodes").stdout


def test_retry_runs_only_the_failed_and_writes_the_whole_output(flaky: RunResult) -> None:
    """After the fix, a retry runs one mini-batch and its output holds all ten items."""
    (flaky.spool.parent / "broken").unlink()
    r = ctl(flaky.spool, "retry", flaky.job_id)
    assert r.returncode == 0, r.stderr
    new_id = r.stdout.strip()
    assert "1 mini-batches" in r.stderr
    with daemons(flaky.spool):
        wait_until(lambda: _state(flaky.spool, new_id) == "Completed", 60, "the retry to end")
    doc = json.loads(ctl(flaky.spool, "status", new_id, "--json").stdout)
    assert (doc["total_mbs"], doc["succeeded_mbs"]) == (1, 1)
    out = flaky.spool / "jobs" / new_id / "outputs" / "out.txt"
    assert out.read_text().splitlines() == [f"item{i:05d}.txt" for i in range(10)]
    again = ctl(flaky.spool, "retry", new_id)
    assert again.returncode == 2 and "nothing to retry" in again.stderr


def test_status_of_a_huge_job_is_fast(tmp_path: Path) -> None:
    """200,000 finished mini-batches: status reads the summary only, in under 0.2 s."""
    spool = tmp_path / "spool"
    job_id = "huge-20260101-000000-abcd"
    job = spool / "jobs" / job_id
    (job / "state").mkdir(parents=True)
    for d in ("inbox", "active", "nodes", "leader"):
        (spool / d).mkdir()
    total = 200_000
    doc = {
        "schema": 1, "job_id": job_id, "name": "huge", "state": "Completed", "reason": "",
        "elapsed_s": 3600.0, "split_done": True, "planned_mbs": total, "total_mbs": total,
        "succeeded_mbs": total - 7, "failed_mbs": 7, "partial_mbs": 0, "items": total * 10,
        "succeeded_items": total * 10 - 70, "failed_items": 70, "attempts": total + 14,
        "requeues": 0, "outstanding_tasks": 0, "rate_mbs_per_s": 55.5, "eta_s": 0.0,
    }  # fmt: skip
    (job / "state" / "status.json").write_text(json.dumps(doc))
    report = job / "logs" / "sys" / "job_report"
    report.mkdir(parents=True)
    with open(report / "processed_mini-batches.csv", "w") as f:
        f.writelines(
            f"{i:09d},1,succeeded,n1,process000,1,10,10,0,,0.1,0.1,0.1,\n" for i in range(total)
        )
    for t in range(0, total, 16):  # tiny mini-batches travel 16 to a task
        shard = job / "tasks" / "done" / f"{t // 4096:06d}"
        shard.mkdir(parents=True, exist_ok=True)
        (shard / f"{t:09d}.a1.e1.n1").touch()
    for args in (["status", job_id], ["status"], ["status", job_id, "--json"]):
        best = min(_timed(spool, args) for _ in range(3))
        assert best < 0.2, f"prsctl {' '.join(args)} took {best:.3f} s"
    out = io.StringIO()
    with redirect_stdout(out):
        prsctl_main(["status", job_id, "--spool", str(spool)])
    assert "200000 of 200000 mini-batches 100.0%" in out.getvalue()
    assert "succeeded 199993  failed 7" in out.getvalue()


def _timed(spool: Path, args: list[str]) -> float:
    start = time.perf_counter()
    with redirect_stdout(io.StringIO()):
        assert prsctl_main([*args, "--spool", str(spool)]) == 0
    return time.perf_counter() - start


def _read_pty(
    fd: int, proc: subprocess.Popen[bytes], timeout_s: float, until: bytes = b""
) -> bytes:
    """What ``proc`` writes to the terminal until it exits (or, with ``until``, until
    those bytes have been written)."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if until and until in b"".join(chunks):
            break
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the other side closed
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    return b"".join(chunks)


GATED = """
    import os, time
    def run(mini_batch):
        while not os.path.exists({gate!r}):
            time.sleep(0.05)
        time.sleep(0.3)
        return list(mini_batch)
"""


def test_watch_redraws_in_place_under_a_terminal(tmp_path: Path) -> None:
    """--watch on a pseudo-terminal redraws the view until the job ends, then exits 0.

    The job's mini-batches wait for a gate that opens once the first view is on the
    screen, so the view has a running job to redraw however slowly prsctl starts."""
    gate = tmp_path / "gate"
    job = make_job(tmp_path, GATED.format(gate=str(gate)), _yaml(workers=1), files=8)
    spool = tmp_path / "spool"
    run = subprocess.Popen(
        [*PRSD, "run", str(job), "--spool", str(spool), "--node-id", NODE],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert run.stdout is not None
        job_id = run.stdout.readline().split()[1]
        primary, secondary = pty.openpty()
        env = {**os.environ, "COLUMNS": "100", "LINES": "40", "TERM": "xterm"}
        watch = subprocess.Popen(
            [*PRSCTL, "status", job_id, "--watch", "--interval", "0.2", "--spool", str(spool)],
            stdin=secondary, stdout=secondary, stderr=secondary, env=env,
        )  # fmt: skip
        os.close(secondary)
        try:
            first = _read_pty(primary, watch, 60, until=b"mini-batches")
            gate.touch()
            screen = (first + _read_pty(primary, watch, 60)).decode(errors="replace")
            assert watch.wait(10) == 0
        finally:
            watch.kill()
            watch.wait()
            os.close(primary)
        assert run.wait(60) == 0
    finally:
        run.kill()
        run.wait()
        if run.stdout is not None:
            run.stdout.close()
    assert screen.count("\x1b[2K") >= 6, screen[-2000:]  # lines erased: redrawn in place
    frames = screen.count("mini-batches")
    assert frames >= 3, screen[-2000:]
    assert "4 of 4 mini-batches 100.0%" in screen and "Completed" in screen


def test_submit_and_cancel_queued_and_running_jobs(tmp_path: Path) -> None:
    """A queued job is canceled when taken in; a running one within seconds, work stopped."""
    spool = tmp_path / "spool"
    job = make_job(tmp_path, SLOW.format(sleep_s=60), _yaml(workers=1), files=4)
    queued = ctl(spool, "submit", str(job), timeout_s=60)
    assert queued.returncode == 0, queued.stderr
    queued_id = queued.stdout.strip()
    assert _state(spool, queued_id) == "Queued"
    assert ctl(spool, "cancel", queued_id).returncode == 0
    running_id = ctl(spool, "submit", str(job), timeout_s=60).stdout.strip()
    with daemons(spool):
        wait_until(lambda: _state(spool, queued_id) == "Canceled", 30, "the queued job canceled")
        wait_until(
            lambda: json.loads(ctl(spool, "nodes", "--json").stdout)["nodes"][0]["busy"] == 1,
            30,
            "a worker busy on the running job",
        )
        started = time.monotonic()
        cancel = ctl(spool, "cancel", running_id[:-2])  # a unique prefix names the job
        assert cancel.returncode == 0 and running_id in cancel.stdout
        wait_until(lambda: _state(spool, running_id) == "Canceled", 30, "the running job canceled")
        assert time.monotonic() - started < 20
    assert "Canceled" in (spool / "jobs" / running_id / "logs" / "job_result.txt").read_text()
    assert not (spool / "jobs" / running_id / "outputs" / "out.txt").exists()
