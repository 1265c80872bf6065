"""The ps snapshot from /proc: real processes, their CPU between two samples, odd names."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import time

import psutil

from prsd.agent.pslist import PsLister, parse_stat

BUSY = "import time\nend = time.time() + 30\nwhile time.time() < end: pass\n"


def test_parse_stat_counts_fields_from_the_last_parenthesis() -> None:
    rest = " ".join(str(n) for n in range(1, 45))
    fields = parse_stat(f"42 (a (b) c) S {rest}")
    assert fields is not None
    assert fields.name == "a (b) c"
    assert fields.state == "S"
    # after the state: ppid is field 4 of stat(5), utime 14, stime 15, start 22, rss 24
    assert fields.ppid == 1
    assert fields.cpu_ticks == 11 + 12
    assert fields.start_ticks == 19
    assert fields.rss_pages == 21
    assert parse_stat("42 no parenthesis") is None
    assert parse_stat("42 (short) S 1 2") is None


def test_the_snapshot_agrees_with_psutil_on_a_busy_child() -> None:
    child = subprocess.Popen([sys.executable, "-c", BUSY, "marker-arg"])
    try:
        lister = PsLister()
        first = {r.pid: r for r in lister.sample()}
        assert first[child.pid].cpu_percent == 0.0  # no earlier sample to compare with
        time.sleep(0.5)
        rows = {r.pid: r for r in lister.sample()}
        row = rows[child.pid]
        assert row.ppid == os.getpid()
        assert row.user == pwd.getpwuid(os.geteuid()).pw_name
        assert row.command.endswith("marker-arg") and sys.executable in row.command
        assert row.status == "running" or row.status == "sleeping"
        assert 30.0 < row.cpu_percent <= 110.0  # a spinning process, one thread
        assert abs(row.rss - psutil.Process(child.pid).memory_info().rss) < 4 * 1024 * 1024
        me = rows[os.getpid()]
        assert me.ppid == os.getppid()
        assert 1 in rows and rows[1].ppid == 0
    finally:
        child.kill()
        child.wait()


def test_a_zombie_is_named_in_brackets_and_a_reaped_process_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    lister = PsLister()
    assert child.pid in {r.pid for r in lister.sample()}
    child.kill()
    deadline = time.monotonic() + 10
    while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    zombie = {r.pid: r for r in lister.sample()}[child.pid]  # not reaped yet
    assert zombie.status == "zombie"
    assert zombie.command == f"[{psutil.Process(child.pid).name()}]"  # no cmdline left
    assert zombie.rss == 0
    child.wait()
    assert child.pid not in {r.pid for r in lister.sample()}
