"""The command line tells the truth wherever its output goes: a bar on a terminal,
steady plain lines and uncut rows in a pipe, lines while ``--watch`` follows a job
into a pipe, one start line per daemon, drained nodes as drained, a script without
``run()`` named as such, and no traceback when the reader closes the pipe."""

from __future__ import annotations

import itertools
import json
import os
import pty
import select
import signal
import subprocess
import time
from typing import TYPE_CHECKING

from tests.helpers import final_record, stop_daemons, wait_until
from tests.jobkit import PRSCTL, PRSD, make_job, prsctl, run_prsd
from tests.liverun import LiveRun

if TYPE_CHECKING:
    from pathlib import Path


SLOW = """
    import time
    def run(mini_batch):
        time.sleep({sleep_s})
        print("x" * 200 + "\\n" * 0, flush=True)
        return list(mini_batch)
"""

CHATTY = """
    def run(mini_batch):
        for i in range(3000):
            print(f"line {{i}} of a chatty mini-batch", flush=False)
        return list(mini_batch)
"""

NO_RUN = """
    def init():
        pass
"""


def _yaml(name: str = "polish", workers: int = 1) -> str:
    return f"""
        name: {name}
        input_data: ./data
        mini_batch_size: "1"
        resources: {{max_concurrency_per_instance: {workers}}}
        task:
          code: ./code
          entry_script: score.py
    """


def ctl(spool: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return prsctl(spool, *args, env={k: v for k, v in os.environ.items() if k != "COLUMNS"})


def _progress_times(run: LiveRun) -> list[float]:
    return [t for t, line in run.lines if line.startswith(("Queued:", "Starting:", "Running:"))]


def test_run_in_a_pipe_writes_a_line_at_once_then_one_every_5_s(tmp_path: Path) -> None:
    job = make_job(tmp_path, SLOW.format(sleep_s=3.5), _yaml(), files=4)
    run = LiveRun(job, tmp_path / "spool")
    try:
        code = run.wait(120)
    finally:
        run.kill()
    assert code == 0, run.text + run.stderr()
    first_at = run.lines[0][0]
    times = _progress_times(run)
    assert len(times) >= 2, run.text
    assert times[0] - first_at < 1.5, run.text  # at once, not after some seconds
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert all(4.0 <= g <= 8.0 for g in gaps), (gaps, run.text)
    assert any(
        line.startswith("Running: ") and " of 4 mini-batches (" in line for _, line in run.lines
    )
    assert "\x1b[" not in run.text  # no terminal codes in a pipe


def _read_pty(
    fd: int, proc: subprocess.Popen[bytes], timeout_s: float
) -> list[tuple[float, bytes]]:
    chunks: list[tuple[float, bytes]] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the other side closed
                break
            if not data:
                break
            chunks.append((time.monotonic(), data))
        elif proc.poll() is not None:
            break
    return chunks


def test_run_on_a_terminal_draws_a_bar_from_the_first_second(tmp_path: Path) -> None:
    job = make_job(tmp_path, SLOW.format(sleep_s=0.5), _yaml(), files=6)
    primary, secondary = pty.openpty()
    env = {**os.environ, "COLUMNS": "120", "LINES": "40", "TERM": "xterm", "PRSD_GPU_COUNT": "0"}
    proc = subprocess.Popen(
        [*PRSD, "run", str(job), "--spool", str(tmp_path / "spool")],
        stdin=secondary, stdout=secondary, stderr=secondary, env=env,
    )  # fmt: skip
    os.close(secondary)
    try:
        chunks = _read_pty(primary, proc, 120)
        assert proc.wait(30) == 0
    finally:
        proc.kill()
        proc.wait()
        os.close(primary)
    seen = b""
    job_at = bar_at = None
    for at, data in chunks:
        seen += data
        if job_at is None and b"job polish-" in seen:
            job_at = at
        if job_at is not None and bar_at is None and "━".encode() in seen:
            bar_at = at
    screen = seen.decode(errors="replace")
    assert job_at is not None and bar_at is not None, screen
    assert bar_at - job_at < 1.5, screen  # the bar is there from the first second
    assert "6/6" in screen and "mini-batches" in screen, screen[-1500:]
    assert screen.rstrip().splitlines()[-1].startswith("Logs: "), screen[-1500:]


def test_status_in_a_pipe_is_not_cut_at_80_columns(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    name = "a-job-name-long-enough-that-its-id-cannot-fit-in-a-narrow-table-column"
    job = make_job(tmp_path, SLOW.format(sleep_s=0), _yaml(name), files=3)
    done = run_prsd(job, spool, env={"PRSD_GPU_COUNT": "0"})
    assert done.returncode == 0, done.stdout + done.stderr
    table = ctl(spool, "status")
    assert table.returncode == 0, table.stderr
    row = table.stdout.splitlines()[1]
    assert row.split()[:2] == [done.job_id, "Completed"], table.stdout  # the id whole, one line
    assert len(row) > 80
    view = ctl(spool, "status", done.job_id)
    assert "items 3/3 succeeded" in view.stdout, view.stdout
    assert all(not line.endswith("…") for line in view.stdout.splitlines()), view.stdout
    # On an 80-column terminal the other columns give way: the id stays whole.
    primary, secondary = pty.openpty()
    env = {**os.environ, "COLUMNS": "80", "LINES": "40", "TERM": "xterm"}
    proc = subprocess.Popen(
        [*PRSCTL, "status", "--spool", str(spool)],
        stdin=secondary, stdout=secondary, stderr=secondary, env=env,
    )  # fmt: skip
    os.close(secondary)
    try:
        screen = b"".join(d for _, d in _read_pty(primary, proc, 60)).decode(errors="replace")
        assert proc.wait(30) == 0
    finally:
        proc.kill()
        proc.wait()
        os.close(primary)
    assert any(done.job_id in line for line in screen.splitlines()), screen


def test_watch_in_a_pipe_streams_lines_while_the_job_runs(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    job = make_job(tmp_path, SLOW.format(sleep_s=1.0), _yaml(), files=5)
    run = LiveRun(job, spool)
    try:
        job_id = run.job_id
        final = spool / "jobs" / job_id / "state" / "final.json"
        watch = subprocess.Popen(
            [*PRSCTL, "status", job_id, "--watch", "--interval", "0.2", "--spool", str(spool)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert watch.stdout is not None
        first = watch.stdout.readline()
        ended_at_first_line = final.exists()
        rest, errors = watch.communicate(timeout=120)
        assert run.wait(120) == 0
    finally:
        run.kill()
    assert watch.returncode == 0, errors
    assert not ended_at_first_line, first  # a line while the job ran, not all at the end
    lines = [first.rstrip(), *rest.splitlines()]
    progress = [line for line in lines if line.startswith(("Queued:", "Starting:", "Running:"))]
    counts = {line.split(",")[0] for line in progress if line.startswith("Running:")}
    assert len(counts) >= 2, lines  # it moved, and each move came as a line
    assert any(line.startswith(f"{job_id}  Completed") for line in lines), lines


def test_no_traceback_when_the_reader_closes_the_pipe(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    job = make_job(tmp_path, CHATTY, _yaml("chatty", workers=2), files=4)
    env = {**os.environ, "PRSD_GPU_COUNT": "0"}
    run = f"{' '.join(PRSD)} run {job} --spool {spool}"
    piped = subprocess.run(
        ["bash", "-c", f"{run} | head -1"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert piped.stdout.startswith("job chatty-"), piped.stdout
    assert "Traceback" not in piped.stderr and "BrokenPipe" not in piped.stderr, piped.stderr
    job_id = piped.stdout.split()[1]
    wait_until((spool / "jobs" / job_id / "state" / "final.json").exists, 60, "the job's end")
    final = json.loads(final_record(spool / "jobs" / job_id / "state"))
    assert final["state"] == "Completed"  # the job went on to its end without a reader
    ctl_cmd = f"{' '.join(PRSCTL)}"
    for args in (f"logs {job_id}", "status", f"status {job_id}", "nodes"):
        r = subprocess.run(
            ["bash", "-c", f"{ctl_cmd} {args} --spool {spool} | head -1"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert r.stderr == "", (args, r.stderr)
        assert len(r.stdout.splitlines()) == 1, (args, r.stdout)


def test_daemons_say_one_start_line_and_a_drained_node_shows_drained(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    env = {**os.environ, "PRSD_GPU_COUNT": "0"}
    host = os.uname().nodename
    with open(tmp_path / "leader.err", "wb") as lerr, open(tmp_path / "agent.err", "wb") as aerr:
        leader = subprocess.Popen(
            [*PRSD, "leader", "--spool", str(spool), "--node-lease-s", "1"],
            stdout=subprocess.PIPE, stderr=lerr, env=env, text=True,
        )  # fmt: skip
        agent = subprocess.Popen(
            [*PRSD, "agent", "--spool", str(spool), "--node-id", "n7", "--slots", "3"],
            stdout=subprocess.PIPE, stderr=aerr, env=env, text=True,
        )  # fmt: skip
        try:
            assert leader.stdout is not None and agent.stdout is not None
            leader_line = leader.stdout.readline().rstrip()
            agent_line = agent.stdout.readline().rstrip()
            wait_until(lambda: (spool / "nodes" / "n7.json").exists(), 60, "the agent's heartbeat")
            agent.send_signal(signal.SIGTERM)
            assert agent.wait(60) == 0
            agent_rest = agent.stdout.read()

            def seen_gone() -> bool:
                try:
                    view = json.loads((spool / "leader" / "nodes.json").read_bytes())
                except (OSError, ValueError):
                    return False
                return view["nodes"].get("n7", {}).get("alive") is False

            wait_until(seen_gone, 60, "the leader to see n7 silent")
            nodes = json.loads(ctl(spool, "nodes", "--json").stdout)["nodes"]
            table = ctl(spool, "nodes").stdout
        finally:
            stop_daemons([leader, agent])  # type: ignore[list-item]
            for p in (leader, agent):
                if p.stdout is not None:
                    p.stdout.close()
    assert leader_line.startswith(f"prsd leader: spool {spool}, host {host} (pid {leader.pid}): ")
    assert agent_line == (
        f"prsd agent: spool {spool}, node n7 on {host} (pid {agent.pid}): 3 worker slots, 0 GPUs"
    )
    assert agent_rest == ""  # one line, not a line per event
    (row,) = nodes
    assert row["drained"] is True and row["stale"] is False, row
    assert "(drained)" in table and "stale" not in table, table


def test_a_script_without_run_is_named_as_such(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    job = make_job(tmp_path, NO_RUN, _yaml("norun", workers=2), files=3)
    r = run_prsd(job, spool, env={"PRSD_GPU_COUNT": "0"})
    assert r.returncode == 42, r.stdout + r.stderr
    reason = r.result_text().splitlines()[1]
    assert reason.startswith("Reason: entry script "), reason
    assert "defines no run(mini_batch) function (process00" in reason, reason
    assert reason.endswith(": no worker could start, so no mini-batch ran"), reason
    assert "init() failed" not in reason, reason
    status = json.loads(ctl(spool, "status", r.job_id, "--json").stdout)
    assert status["state"] == "Failed" and "defines no run(mini_batch)" in status["reason"]
