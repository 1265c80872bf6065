"""One agent per node id: real agents on one spool, and heartbeats from another host."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from prsd.cmdline import default_node_id
from prsd.errors import ExitCode
from prsd.spool.heartbeat import read_heartbeat, write_heartbeat
from prsd.spool.heartbeatrecord import Heartbeat
from prsd.spool.nodehold import NodeHolder, generations, holds_dir
from prsd.spool.opening import open_spool
from tests.fleet import FAST_AGENT, Fleet
from tests.helpers import wait_until

if TYPE_CHECKING:
    import pytest

PRSCTL = [sys.executable, "-m", "prsd.cli.prsctl"]


def _foreign(node_id: str, seq: int, interval_s: float) -> Heartbeat:
    return Heartbeat(
        node_id=node_id,
        seq=seq,
        boot="elsewhere-boot",
        pid=4242,
        host="elsewhere",
        started_at="2026-01-01T00:00:00+00:00",
        updated_at=f"2026-01-01T00:00:{seq % 60:02d}+00:00",
        slots=1,
        gpus=0,
        heartbeat_interval_s=interval_s,
    )


def test_a_second_agent_with_a_live_node_id_refuses_to_start(tmp_path: Path) -> None:
    """The second `prsd agent --node-id n1` exits 4 with one line naming the first."""
    fleet = Fleet(tmp_path / "spool", tmp_path / "logs")
    spool = open_spool(fleet.spool)
    try:
        first = fleet.agent("n1")
        wait_until(lambda: read_heartbeat(spool, "n1") is not None, 60, "n1's first heartbeat")
        second = fleet._start("n1-again", ["agent", "--node-id", "n1", *FAST_AGENT])
        assert second.wait(timeout=60) == ExitCode.NODE_ID_TAKEN
        log = (fleet.logs / "n1-again.1.log").read_text()
        assert f"agent pid {first.pid} on host {os.uname().nodename}" in log, log
        assert "node id 'n1' is held by" in log and "exit 4" in log, log
        assert fleet.alive("n1")
    finally:
        fleet.close()


def test_another_hosts_live_heartbeat_refuses_and_a_dead_one_is_waited_out(tmp_path: Path) -> None:
    """A changing heartbeat from another host refuses the id; an unchanging one frees it."""
    fleet = Fleet(tmp_path / "spool", tmp_path / "logs")
    spool = open_spool(fleet.spool)
    write_heartbeat(spool, _foreign("n2", 1, 0.3))
    try:
        agent = fleet.agent("n2")
        for seq in range(2, 200):  # the other host keeps beating while the agent starts
            if agent.poll() is not None:
                break
            write_heartbeat(spool, _foreign("n2", seq, 0.3))
            time.sleep(0.2)
        assert agent.wait(timeout=60) == ExitCode.NODE_ID_TAKEN
        log = (fleet.logs / "n2.1.log").read_text()
        assert "in use by agent pid 4242 on host elsewhere" in log, log
        # The other host died: its file no longer changes; a new agent waits it out and starts.
        again = fleet.agent("n2")
        wait_until(
            lambda: (b := read_heartbeat(spool, "n2")) is not None and b.pid == again.pid,
            60,
            "the new agent's heartbeat",
        )
    finally:
        fleet.close()


def test_prsctl_nodes_flags_a_node_id_written_by_two_agents(tmp_path: Path) -> None:
    """While another host writes n3's heartbeat too, the running agent says so in prsctl nodes."""
    fleet = Fleet(tmp_path / "spool", tmp_path / "logs")
    spool = open_spool(fleet.spool)
    try:
        fleet.agent("n3")
        wait_until(lambda: read_heartbeat(spool, "n3") is not None, 60, "n3's first heartbeat")
        seq = [0]

        def flagged() -> bool:
            seq[0] += 1
            beat = read_heartbeat(spool, "n3")
            if beat is not None and beat.conflict:
                return True
            write_heartbeat(spool, _foreign("n3", seq[0], 0.5))
            return False

        wait_until(flagged, 60, "the agent to notice the other writer")
        out = subprocess.run(
            [*PRSCTL, "nodes", "--json", "--spool", str(fleet.spool)],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
        (row,) = json.loads(out)["nodes"]
        assert row["conflict"] == "pid 4242 on host elsewhere", row
        table = subprocess.run(
            [*PRSCTL, "nodes", "--spool", str(fleet.spool)],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
            env=dict(os.environ, COLUMNS="200"),
        ).stdout
        assert "node id also used by pid 4242 on host elsewhere" in table, table
        assert fleet.alive("n3")
    finally:
        fleet.close()


def test_the_default_node_id_is_unique_per_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --node-id or PRSD_NODE_ID: the short host name and 8 hex of the machine id
    (cloned VMs with one host name get two ids); PRSD_NODE_ID still wins."""
    monkeypatch.delenv("PRSD_NODE_ID", raising=False)
    machine = Path("/etc/machine-id").read_text(encoding="ascii").strip()[:8]
    host = socket.gethostname().split(".")[0]
    assert default_node_id() == f"{host}-{machine}"
    monkeypatch.setenv("PRSD_NODE_ID", "gpu-7")
    assert default_node_id() == "gpu-7"


def test_an_agent_whose_hold_was_superseded_stops(tmp_path: Path) -> None:
    """A higher generation of its node id's hold (another agent judged it dead): the
    running agent hands its work back and exits 4, naming the new holder."""
    fleet = Fleet(tmp_path / "spool", tmp_path / "logs")
    spool = open_spool(fleet.spool)
    try:
        agent = fleet.agent("n5")
        folder = holds_dir(spool, "n5")
        wait_until(lambda: generations(folder) != [], 60, "n5's hold")
        top = generations(folder)[-1]
        other = NodeHolder("n5", "elsewhere", "other-boot", 4242, "other-token", top + 1)
        (folder / f"{top + 1:09d}").write_bytes(other.encode())
        assert agent.wait(timeout=60) == ExitCode.NODE_ID_TAKEN
        log = (fleet.logs / "n5.1.log").read_text()
        assert "taken over by pid 4242 on host elsewhere" in log, log
        assert generations(folder) == [top, top + 1]  # the loser removes nothing
    finally:
        fleet.close()
