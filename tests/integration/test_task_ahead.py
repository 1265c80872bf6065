"""A busy worker is handed its next task before its current one ends; a worker that
dies holding one loses and repeats nothing; a drained agent's worker does not begin it.

Real ``prsd run`` processes and workers. The entry scripts look at the worker's own
end of its control channel (``select`` on the socket the worker reads its ``run``
frames from): while ``run()`` runs, bytes there are the next task's frames, sent by
the agent ahead of the current task's end (before, the agent sent them only once the
worker had answered ``done``: the channel was never readable inside ``run()``).
"""

from __future__ import annotations

import collections
import signal
from typing import TYPE_CHECKING

from tests.fleet import Fleet
from tests.helpers import wait_until
from tests.jobkit import ECHO_YAML, make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

ITEMS = 60
# A job this small never lists 16 pending tasks (the default below which no task is
# handed over ahead: tests/integration/test_feed_ahead.py checks that rule).
ANY_LISTING = {"PRSD_HAND_AHEAD_WHEN_LISTED": "1"}

CHANNEL = """
import gc, select, time

def _next_task_waiting(within_s):
    # The worker's end of its control channel (prsd.worker.host.Channel).
    channel = next(o for o in gc.get_objects() if type(o).__name__ == "Channel" and hasattr(o, "sock"))
    end = time.monotonic() + within_s
    while True:
        if select.select([channel.sock], [], [], 0)[0]:
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.005)
"""

SEES_AHEAD = (
    CHANNEL
    + """
def run(mini_batch):
    time.sleep(0.02)
    ahead = _next_task_waiting(0.2)
    return [p.rsplit("/", 1)[-1] + (" ahead" if ahead else " alone") for p in mini_batch]
"""
)

DIES_HOLDING_AHEAD = (
    CHANNEL
    + """
import os

def run(mini_batch):
    name = mini_batch[0].rsplit("/", 1)[-1]
    marker = MARKER
    if name >= "item00020.txt" and not os.path.exists(marker) and _next_task_waiting(2.0):
        open(marker, "w").write(name)
        os._exit(3)  # a crash while the next task waits in the channel
    time.sleep(0.01)
    return [name]
"""
)


HOLDS_WHILE_AHEAD = (
    CHANNEL
    + """
import os
from azureml_user.parallel_run import EntryScript

def run(mini_batch):
    name = mini_batch[0].rsplit("/", 1)[-1]
    with open(os.environ["CALLS"], "a") as f:
        f.write("%d %s\\n" % (os.getpid(), name))
    hold = False
    mine = os.environ.get("HOLD_IN", "") in ("", EntryScript().agent_name)
    if mine and not os.path.exists(os.environ["MARKER"]) and _next_task_waiting(0.5):
        try:
            fd = os.open(os.environ["MARKER"], os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            pass
        else:
            os.write(fd, ("%d %s" % (os.getpid(), name)).encode())
            os.close(fd)
            hold = True  # the agent is told to drain (or cap) now, while this run() goes on
    time.sleep(3.0 if hold else 0.6)
    return [name]
"""
)

# Mini-batches of 0.6 s or more: the leader packs one to a task (tasks of about 0.5 s).
DRAIN_YAML = """
type: parallel
name: drain-ahead
input_data: ./data
mini_batch_size: "1"
resources: {{max_concurrency_per_instance: 2}}
retry_settings: {{max_retries: 0, timeout: 60}}
output_action: append_row
append_row_file_name: out.txt
environment_variables: {{CALLS: "{calls}", MARKER: "{marker}", HOLD_IN: "{hold_in}"}}
task:
  code: ./code
  entry_script: score.py
"""


def _rows(output: Path) -> list[str]:
    return output.read_text(encoding="utf-8").splitlines()


def test_a_busy_worker_has_its_next_task_before_its_current_ends(tmp_path: Path) -> None:
    job = make_job(tmp_path, SEES_AHEAD, ECHO_YAML, files=ITEMS)
    result = run_prsd(job, tmp_path / "spool", env=ANY_LISTING)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = _rows(result.output("out.txt"))
    names = sorted(r.split()[0] for r in rows)
    assert names == [f"item{i:05d}.txt" for i in range(ITEMS)]
    ahead = sum(1 for r in rows if r.endswith(" ahead"))
    # The mini-batches of every task but the last ones (none left to hand over, and the
    # leader packs tasks of about 0.5 s once it knows a mini-batch's time) see one.
    assert ahead >= 4, rows


def test_a_worker_that_dies_holding_its_next_task_loses_and_repeats_nothing(
    tmp_path: Path,
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    script = f"MARKER = {str(marks / 'died')!r}\n" + DIES_HOLDING_AHEAD
    job = make_job(tmp_path, script, ECHO_YAML, files=ITEMS)
    result = run_prsd(job, tmp_path / "spool", env=ANY_LISTING)
    assert result.returncode == 0, result.stdout + result.stderr
    died = (marks / "died").read_text(encoding="utf-8")  # it did die holding one
    rows = _rows(result.output("out.txt"))
    assert sorted(rows) == [f"item{i:05d}.txt" for i in range(ITEMS)], rows
    report = result.report()
    succeeded = collections.Counter(
        r["mini_batch_id"] for r in report if r["status"] == "succeeded"
    )
    assert len(succeeded) == ITEMS and set(succeeded.values()) == {1}, succeeded
    failed = [r for r in report if r["status"] != "succeeded"]
    assert len(failed) == 1 and failed[0]["status"] == "crashed", failed
    assert "died while running mini-batch" in result.main_logs(), died


def test_a_drained_agents_worker_does_not_begin_the_task_handed_to_it_ahead(
    tmp_path: Path,
) -> None:
    """SIGTERM while a worker's next task waits behind its running one: the running
    mini-batch finishes, the task waiting is withdrawn (never begun on the drained node)
    and returned; another node runs it, and every row comes once, in order."""
    items = 16
    calls, marker = tmp_path / "calls.txt", tmp_path / "held"
    yaml = DRAIN_YAML.format(calls=calls, marker=marker, hold_in="")
    job = make_job(tmp_path, HOLDS_WHILE_AHEAD, yaml, files=items)
    fleet = Fleet(tmp_path / "spool", tmp_path / "daemon-logs", env=dict(ANY_LISTING))
    try:
        fleet.leader()
        drained = fleet.agent("drained")
        job_id = fleet.submit(job)
        wait_until(marker.exists, 60, "a worker to find its next task waiting")
        fleet.kill("drained", signal.SIGTERM)
        assert drained.wait(timeout=60) == 0
        holder, held = marker.read_text(encoding="utf-8").split()
        fleet.agent("healthy")
        wait_until(lambda: fleet.final(job_id) is not None, 120, "the job to end")
        final = fleet.final(job_id)
        assert final is not None and final["state"] == "Completed", final
    finally:
        fleet.close()
    lines = [line.split() for line in calls.read_text(encoding="utf-8").splitlines()]
    mine = [name for pid, name in lines if pid == holder]
    # The holder's run() during the SIGTERM was its last: the task behind it never began
    # (before the withdrawal, it began it as soon as that run() returned).
    assert mine[-1] == held, mine
    out = tmp_path / "spool" / "jobs" / job_id / "outputs" / "out.txt"
    assert _rows(out) == [f"item{i:05d}.txt" for i in range(items)]
    node_log = tmp_path / "spool" / "jobs" / job_id / "logs" / "sys" / "node" / "drained"
    assert "handed to it ahead: withdrawn" in (node_log / "_main.txt").read_text()


def test_a_capped_slots_worker_does_not_begin_the_task_handed_to_it_ahead(
    tmp_path: Path,
) -> None:
    """A second job takes half the node's slots while the first job's second worker
    has its next task waiting: that worker finishes its mini-batch and retires without
    beginning the task (another worker of the job runs it); both jobs complete."""
    items = 12
    calls, marker = tmp_path / "calls.txt", tmp_path / "held"
    yaml = DRAIN_YAML.format(calls=calls, marker=marker, hold_in="process001")
    first = make_job(tmp_path / "first", HOLDS_WHILE_AHEAD, yaml, files=items)
    # The second job outlasts the hold (10 x 0.6 s on its one slot against 3 s): the
    # cap still stands when the held mini-batch ends.
    second = make_job(tmp_path / "second", HOLDS_WHILE_AHEAD, yaml, files=10)
    fleet = Fleet(tmp_path / "spool", tmp_path / "daemon-logs", env=dict(ANY_LISTING))
    try:
        fleet.leader()
        fleet.agent("shared", "--slots", "2")
        first_id = fleet.submit(first)
        wait_until(marker.exists, 60, "the second worker to find its next task waiting")
        second_id = fleet.submit(second)  # the node's 2 slots: 1 for each job from now
        ids = (first_id, second_id)
        wait_until(lambda: all(fleet.final(j) is not None for j in ids), 120, "the jobs to end")
        for job_id in ids:
            final = fleet.final(job_id)
            assert final is not None and final["state"] == "Completed", final
    finally:
        fleet.close()
    holder, held = marker.read_text(encoding="utf-8").split()
    lines = [line.split() for line in calls.read_text(encoding="utf-8").splitlines()]
    mine = [name for pid, name in lines if pid == holder]
    assert mine[-1] == held, mine  # the capped worker began nothing after the cap
    for job_id, n in ((first_id, items), (second_id, 10)):
        out = tmp_path / "spool" / "jobs" / job_id / "outputs" / "out.txt"
        assert _rows(out) == [f"item{i:05d}.txt" for i in range(n)]
    main = tmp_path / "spool" / "jobs" / first_id / "logs" / "sys" / "node" / "shared"
    assert (
        "withdrawn (the job's slots on this node were capped at 1)"
        in (main / "_main.txt").read_text()
    )
