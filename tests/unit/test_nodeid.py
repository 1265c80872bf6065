"""Judging another agent's heartbeat for the same node id (pure parts)."""

from __future__ import annotations

from dataclasses import replace

from prsd.agent.nodeid import (
    MAX_WATCH_S,
    changed,
    conflict_with,
    held_conflict,
    in_use_line,
    watch_window_s,
)
from prsd.spool.heartbeatrecord import Heartbeat

BEAT = Heartbeat("n1", 7, "boot-a", 123, "gpu-3", "t0", "2026-11-24T10:00:00+00:00", 4, 0)


def test_conflict_is_another_boot_on_disk() -> None:
    """Only a beat from another agent start is a conflict."""
    assert conflict_with("boot-a", BEAT) == ""
    assert conflict_with("boot-a", None) == ""
    assert conflict_with("boot-b", BEAT) == "pid 123 on host gpu-3"


def test_changed_means_a_later_beat_or_another_agent() -> None:
    """A new seq or boot is a change; the same beat read again or a missing file is not."""
    assert not changed(BEAT, BEAT)
    assert not changed(BEAT, None)
    assert changed(BEAT, replace(BEAT, seq=8))
    assert changed(BEAT, replace(BEAT, boot="boot-b"))


def test_watch_window_follows_the_writers_interval_within_a_bound() -> None:
    """Two of the writer's intervals plus a second, never more than MAX_WATCH_S."""
    assert watch_window_s(replace(BEAT, heartbeat_interval_s=2.0)) == 5.0
    assert watch_window_s(replace(BEAT, heartbeat_interval_s=0.0)) == 5.0
    assert watch_window_s(replace(BEAT, heartbeat_interval_s=600.0)) == MAX_WATCH_S


def test_refusal_names_host_pid_and_last_beat() -> None:
    """The one line says who holds the id and when it last beat."""
    line = in_use_line("n1", BEAT)
    assert "pid 123 on host gpu-3" in line and "2026-11-24T10:00:00+00:00" in line


def test_a_conflict_stays_shown_for_a_while_after_it_was_seen() -> None:
    assert held_conflict("", 0.0, "pid 1 on host h", 10.0, 60.0) == ("pid 1 on host h", 10.0)
    assert held_conflict("pid 1 on host h", 10.0, "", 69.0, 60.0) == ("pid 1 on host h", 10.0)
    assert held_conflict("pid 1 on host h", 10.0, "", 70.0, 60.0) == ("", 10.0)
    assert held_conflict("pid 1 on host h", 10.0, "pid 2 on host g", 20.0, 60.0) == (
        "pid 2 on host g",
        20.0,
    )
    assert held_conflict("", 0.0, "", 5.0, 60.0) == ("", 0.0)
