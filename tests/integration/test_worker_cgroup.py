"""Worker groups on this machine's real cgroups: each way of killing ends a setsid'd grandchild.

A real process double-forks a ``sleep 1000`` into a new session after it was put in
its group; killing the group must end the sleep, for every hierarchy the plan can
choose and for the environment-marker sweep used where no cgroup can be made.
"""

from __future__ import annotations

import os
import subprocess
from functools import partial
from typing import TYPE_CHECKING

import psutil
import pytest

from prsd.agent.cgroup import TOKEN_VARIABLE, Sandbox, WorkerGroup
from prsd.agent.cgroupplan import Plan
from tests.helpers import wait_until

if TYPE_CHECKING:
    from pathlib import Path

# The child waits for the test to put it in its group before it forks.
FORKER = "read go; setsid sh -c 'sleep 1000 & echo $! > {pid_file}; wait' & wait"


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _plan(kind: str) -> Plan:
    plan = Sandbox.from_machine().plan
    if kind == "v2":
        kill = tuple(h for h in plan.kill if h.version == 2)
    elif kind == "none":
        kill = ()
    else:
        kill = tuple(h for h in plan.kill if h.version == 1 and h.has(kind))
    assert kind == "none" or kill, f"this machine has no {kind} hierarchy: {plan}"
    return Plan(kill, ())


def _run_in_group(sandbox: Sandbox, tmp_path: Path) -> tuple[WorkerGroup, int]:
    pid_file = tmp_path / "sleep.pid"
    token = sandbox.new_token()
    proc = subprocess.Popen(
        ["sh", "-c", FORKER.format(pid_file=pid_file)],
        stdin=subprocess.PIPE,
        env={**os.environ, TOKEN_VARIABLE: token},
        start_new_session=True,
    )
    group = sandbox.enter(proc.pid, token, None)
    assert proc.stdin is not None
    proc.stdin.write(b"go\n")
    proc.stdin.close()
    try:
        wait_until(
            lambda: pid_file.exists() and pid_file.read_text().strip() != "", 30, "the sleep"
        )
    except BaseException:
        os.killpg(proc.pid, 9)  # reaped here: a failure leaves no process to a later test
        proc.wait(timeout=30)
        raise
    sleeper = int(pid_file.read_text())
    os.killpg(proc.pid, 9)  # what the stop ladder does: the sleep is in another session
    proc.wait(timeout=30)
    assert not _gone(sleeper), "the sleep died with the process group: the test proves nothing"
    return group, sleeper


@pytest.mark.parametrize("kind", ["v2", "freezer", "pids", "memory", "none"])
def test_killing_the_group_ends_a_setsid_grandchild(tmp_path: Path, kind: str) -> None:
    """cgroup.kill, v1 freezer, v1 pid loops and the token sweep each end the sleep."""
    sandbox = Sandbox(_plan(kind))
    group, sleeper = _run_in_group(sandbox, tmp_path)
    try:
        assert sleeper in group.pids()
        group.kill_and_remove()
        wait_until(partial(_gone, sleeper), 30, "the sleep to die")
        assert all(not f.exists() for f in group.folders())
    finally:
        if not _gone(sleeper):
            os.kill(sleeper, 9)


def test_groups_of_a_dead_agent_are_swept(tmp_path: Path) -> None:
    """A group named after an agent pid that is gone is killed and removed by the next agent.

    The "agent" lives until the group holds its sleep: an agent that other tests start
    meanwhile sweeps every stale group of this machine, and would end a group named
    after a dead pid while it is being set up. Once it is gone, another agent's sweep
    may come first: then ours finds nothing, and the group must be gone already.
    """
    agent = subprocess.Popen(["sleep", "600"])
    try:
        stale = Sandbox(_plan("v2"), prefix=f"prsd.{agent.pid}")
        group, sleeper = _run_in_group(stale, tmp_path)
    finally:
        agent.kill()
        agent.wait()
    try:
        removed = Sandbox(_plan("v2")).sweep_stale()
        assert removed >= 1 or all(not f.exists() for f in group.folders())
        wait_until(partial(_gone, sleeper), 30, "the stale group's sleep to die")
        assert all(not f.exists() for f in group.folders())
    finally:
        if not _gone(sleeper):
            os.kill(sleeper, 9)
