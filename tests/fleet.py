"""A fleet on one machine: ``prsd leader`` and ``prsd agent`` processes on one spool.

Real processes, real signals: tests start and kill them exactly as systemd or a
preempted VM would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prsd.spool.opening import open_spool
from prsd.submit import submit
from tests.helpers import final_record, wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

PRSD = [sys.executable, "-m", "prsd.daemon"]

# Short leases so that failover happens in seconds, not the production defaults.
FAST_LEADER = ["--lease-s", "2", "--heartbeat-s", "0.3", "--node-lease-s", "3"]
FAST_AGENT = ["--heartbeat-s", "0.5", "--drain-grace-s", "30"]


@dataclass
class Fleet:
    """Daemons of one spool; every process started is killed at ``close``."""

    spool: Path
    logs: Path
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    starts: dict[str, int] = field(default_factory=dict)
    views: dict[str, Path] = field(default_factory=dict)  # process name -> its spool path

    def view(self, name: str) -> Path:
        """The path a process sees the spool at (its own mount on the FUSE rig)."""
        return self.views.get(name, self.spool)

    def _start(
        self, name: str, args: list[str], wrap: list[str] | None = None
    ) -> subprocess.Popen[bytes]:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.starts[name] = self.starts.get(name, 0) + 1
        log = open(self.logs / f"{name}.{self.starts[name]}.log", "wb")  # noqa: SIM115
        env = dict(os.environ)
        env.update(self.env)
        env.setdefault("PRSD_UNSAFE_SPOOL", "1")  # the test spool is a local disk (tmpfs ok)
        command = [*PRSD, *args, "--spool", str(self.view(name)), "--log-level", "INFO"]
        proc = subprocess.Popen(
            [*(wrap or []), *command],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        log.close()
        self.procs[name] = proc
        return proc

    def leader(
        self, name: str = "leader", *extra: str, wrap: list[str] | None = None
    ) -> subprocess.Popen[bytes]:
        return self._start(name, ["leader", *FAST_LEADER, *extra], wrap)

    def agent(
        self, node_id: str, *extra: str, wrap: list[str] | None = None, name: str = ""
    ) -> subprocess.Popen[bytes]:
        """``prsd agent --node-id node_id``, known to the fleet as ``name`` (default: the id)."""
        args = ["agent", "--node-id", node_id, *FAST_AGENT, *extra]
        return self._start(name or node_id, args, wrap)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs[name]
        if proc.poll() is None:
            os.kill(proc.pid, sig)
        if sig in (signal.SIGKILL,):
            proc.wait(timeout=30)

    def alive(self, name: str) -> bool:
        return name in self.procs and self.procs[name].poll() is None

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=30)

    def submit(self, job_dir: Path) -> str:
        job_id, _ = submit(job_dir, open_spool(self.spool))
        return job_id

    def final(self, job_id: str) -> dict[str, object] | None:
        path = self.spool / "jobs" / job_id / "state" / "final.json"
        try:
            return dict(json.loads(final_record(path.parent)))
        except (OSError, ValueError):
            return None

    def leader_epoch(self) -> int:
        try:
            names = os.listdir(self.spool / "leader")
        except FileNotFoundError:
            return 0
        return max((int(n.split("-")[1]) for n in names if n.startswith("epoch-")), default=0)


@contextmanager
def serving(base: Path, node_id: str = "daemon-node") -> Iterator[Fleet]:
    """A leader leading and one agent beating on ``base / "spool"``, stopped after."""
    fleet = Fleet(base / "spool", base / "daemon-logs")
    try:
        fleet.leader()
        fleet.agent(node_id)
        wait_until(lambda: fleet.leader_epoch() == 1, 60, "the leader daemon to lead")
        wait_until((fleet.spool / "nodes" / f"{node_id}.json").exists, 60, "the agent's heartbeat")
        yield fleet
    finally:
        fleet.close()
