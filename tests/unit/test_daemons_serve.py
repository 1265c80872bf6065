"""When ``prsd run`` hands its job over: a live leader and a live agent that serve every
job; another ``prsd run`` (ids starting with ONE_JOB_PREFIX) serves only its own."""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from prsd.read.fleet import daemons_serve
from prsd.spool.heartbeat import write_heartbeat
from prsd.spool.heartbeatrecord import Heartbeat
from prsd.spool.lease import ONE_JOB_PREFIX, LeaderBeat, write_beat
from prsd.spool.opening import open_spool

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.layout import SpoolLayout

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _at(age_s: float) -> str:
    return (NOW - timedelta(seconds=age_s)).isoformat()


def _agent(spool: SpoolLayout, node: str, boot: str, age_s: float = 1.0, **kw: bool) -> None:
    beat = Heartbeat(node, 1, boot, os.getpid(), socket.gethostname(), _at(60), _at(age_s), 2, 0)
    write_heartbeat(spool, Heartbeat(**{**beat.__dict__, **kw}))


def test_a_live_leader_and_agent_serve(tmp_path: Path) -> None:
    spool = open_spool(tmp_path / "spool")
    assert not daemons_serve(spool, NOW)  # nothing ever ran
    write_beat(spool, LeaderBeat(1, "a1b2", 5, _at(1)))
    assert not daemons_serve(spool, NOW)  # no agent
    _agent(spool, "n1", "c3d4")
    assert daemons_serve(spool, NOW)


def test_another_prsd_run_is_no_daemon(tmp_path: Path) -> None:
    spool = open_spool(tmp_path / "spool")
    write_beat(spool, LeaderBeat(1, ONE_JOB_PREFIX + "a1b2", 5, _at(1)))
    _agent(spool, "n1", "c3d4")
    assert not daemons_serve(spool, NOW)  # the leader is a prsd run's
    write_beat(spool, LeaderBeat(2, "e5f6", 1, _at(1)))
    _agent(spool, "n1", ONE_JOB_PREFIX + "c3d4")
    assert not daemons_serve(spool, NOW)  # the only agent is a prsd run's


def test_a_stale_leader_or_a_draining_agent_does_not_serve(tmp_path: Path) -> None:
    spool = open_spool(tmp_path / "spool")
    write_beat(spool, LeaderBeat(1, "a1b2", 5, _at(600)))
    _agent(spool, "n1", "c3d4")
    assert not daemons_serve(spool, NOW)
    write_beat(spool, LeaderBeat(1, "a1b2", 6, _at(1)))
    _agent(spool, "n1", "c3d4", draining=True)
    assert not daemons_serve(spool, NOW)
    _agent(spool, "n1", "c3d4", age_s=600)
    assert not daemons_serve(spool, NOW)
