"""The leader lease on real files, with real (dead and alive) holder processes.

The tests give ``try_once`` their own times, so the clock check (which compares the
machine's clock with the spool's) is off here: ``check_clock=False``.
"""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from prsd.leader.election import Deposed, Election
from prsd.spool.lease import current_epoch, holder_is_dead_here, new_holder, read_holder, try_take
from prsd.spool.opening import open_spool

if TYPE_CHECKING:
    from pathlib import Path


def test_an_epoch_is_taken_once(tmp_path: Path) -> None:
    spool = open_spool(tmp_path / "spool")
    assert try_take(spool, new_holder(1, "a"))
    assert not try_take(spool, new_holder(1, "b"))
    assert try_take(spool, new_holder(1, "a")), "the holder's own retry still wins"
    assert current_epoch(spool) == 1
    holder = read_holder(spool, 1)
    assert holder is not None and holder.holder == "a"


def test_a_dead_process_on_this_host_is_known_dead(tmp_path: Path) -> None:
    alive = new_holder(1, "me")
    assert not holder_is_dead_here(alive)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    gone = alive.__class__(**{**alive.__dict__, "pid": proc.pid})
    assert holder_is_dead_here(gone)
    reused = alive.__class__(**{**alive.__dict__, "pid_started": alive.pid_started - 100})
    assert holder_is_dead_here(reused), "a reused pid is not the holder"


def test_a_standby_waits_a_full_lease_of_silence(tmp_path: Path) -> None:
    spool = open_spool(tmp_path / "spool")
    leader = Election(spool, lease_s=5.0, check_clock=False)
    assert leader.try_once(0.0) == 1
    standby = Election(spool, lease_s=5.0, check_clock=False)
    # The holder is this very process (alive): only silence can depose it.
    assert standby.try_once(10.0) == 0
    leader.beat()
    assert standby.try_once(14.9) == 0
    assert standby.try_once(20.0) == 2, "silent for 5 s by the standby's clock"
    with pytest.raises(Deposed):
        leader.check()
    assert standby.try_once(30.0, patient=False) == 2


def test_prsd_run_style_takes_over_a_dead_holder_at_once(tmp_path: Path) -> None:
    spool = open_spool(tmp_path / "spool")
    code = (
        "import sys; from pathlib import Path; from prsd.spool.opening import open_spool; "
        "from prsd.leader.election import Election; "
        "e = Election(open_spool(Path(sys.argv[1]))); print(e.try_once(0.0))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "spool")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip().splitlines()[-1] == "1"
    assert Election(spool).try_once(0.0, patient=False) == 2


def test_old_epoch_files_are_pruned_by_the_new_holder(tmp_path: Path) -> None:
    spool = open_spool(tmp_path / "spool")
    for epoch in range(1, 6):
        assert try_take(spool, new_holder(epoch, f"old-{epoch}"))
    election = Election(spool, lease_s=1.0, check_clock=False)
    assert election.try_once(0.0) == 0, "the holder (this live process) is still fresh"
    assert election.try_once(5.0) == 6, "silent for a lease: the standby takes over"
    names = sorted(p.name for p in spool.leader.glob("epoch-*"))
    assert names == ["epoch-00000004", "epoch-00000005", "epoch-00000006"]
    assert current_epoch(spool) == 6
