"""The pure rules behind fault handling: which errors are storage faults, backoff,
void names, stale statuses, elapsed time, printable names."""

from __future__ import annotations

import errno
import json

import pytest

from prsd.inputsplit.split import printable
from prsd.leader.run.jobclock import age_s
from prsd.leader.run.voided import voided_tasks
from prsd.spool.faults import (
    BACKOFF_FIRST_S,
    BACKOFF_MAX_S,
    FaultState,
    next_backoff_s,
    padded,
    storage_fault,
)
from prsd.spool.statusschema import reconcile


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.ENOSPC, "disk is full"),
        (errno.EDQUOT, "quota"),
        (errno.EROFS, "read-only"),
        (errno.EIO, "I/O error"),
        (errno.ESTALE, "stale file handle"),
    ],
)
def test_storage_errnos_are_faults(code: int, words: str) -> None:
    """Each healing storage errno is recognised, also inside groups and causes."""
    exc = OSError(code, "x")
    assert words in (storage_fault(exc) or "")
    group = ExceptionGroup("tg", [ExceptionGroup("inner", [exc])])
    assert storage_fault(group) == storage_fault(exc)
    try:
        try:
            raise exc
        except OSError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert storage_fault(outer) == storage_fault(exc)


@pytest.mark.parametrize(
    "exc",
    [FileNotFoundError(errno.ENOENT, "gone"), PermissionError(errno.EACCES, "no"), KeyError("x")],
)
def test_other_errors_are_not_storage_faults(exc: BaseException) -> None:
    """Missing files and permissions fail the job; they do not heal by waiting."""
    assert storage_fault(exc) is None


def test_backoff_doubles_to_a_cap() -> None:
    """0.5 s, then doubling, never above the cap."""
    waits = [next_backoff_s(0.0)]
    for _ in range(10):
        waits.append(next_backoff_s(waits[-1]))
    assert waits[0] == BACKOFF_FIRST_S and waits[1] == 2 * BACKOFF_FIRST_S
    assert max(waits) == BACKOFF_MAX_S


def test_fault_state_logs_a_condition_once() -> None:
    """hit() is True only for a new condition; clear() ends it; waiting() follows backoff."""
    state = FaultState()
    assert state.hit("full", 100.0) is True
    assert state.hit("full", 101.0) is False
    assert state.waiting(101.5) and not state.waiting(200.0)
    assert state.hit("read-only", 102.0) is True
    assert state.clear() is True and state.clear() is False
    assert state.condition == ""


def test_padding_leaves_room_in_place() -> None:
    """Padded documents are a multiple of 4 KiB and still parse as JSON."""
    data = padded(b'{"a": 1}')
    assert len(data) % 4096 == 0 and json.loads(data) == {"a": 1}


def test_voided_tasks_match_outstanding_names_only() -> None:
    """void/<task>.<node>: only outstanding tasks count; node ids may hold dots."""
    names = ["000000002.a1.e1.n1", "000000004.a2.e1.node.with.dots", "000000006.a1.e1.n2", "junk"]
    found = voided_tasks(names, {"000000002.a1.e1", "000000004.a2.e1"})
    assert found == [("000000002.a1.e1", "n1"), ("000000004.a2.e1", "node.with.dots")]


def test_final_state_wins_over_a_late_status() -> None:
    """A Running document after final.json shows the end; a matching one is untouched."""
    doc = {"state": "Running", "reason": "", "epoch": 1, "output": "", "eta_s": 3.0}
    final = {"state": "Completed", "reason": "", "output": "/x/out.txt"}
    shown = reconcile(doc, final)
    assert shown["state"] == "Completed" and shown["output"] == "/x/out.txt"
    assert shown["stale_status_ignored"] is True and shown["eta_s"] is None
    assert reconcile(doc, None) is doc
    same = {"state": "Completed", "reason": ""}
    assert "stale_status_ignored" not in reconcile(same, final)


def test_final_counts_win_over_a_late_status() -> None:
    """final.json's counts replace a deposed leader's late ones (Completed 45 of 400 was
    shown before); a final.json of an older version (no counts) leaves them as they are."""
    doc = {"state": "Running", "epoch": 1, "total_mbs": 400, "succeeded_mbs": 45, "eta_s": 9.0}
    counts = {"total_mbs": 400, "succeeded_mbs": 400, "failed_mbs": 0, "not_a_field": 1}
    shown = reconcile(doc, {"state": "Completed", "reason": "", "counts": counts})
    assert shown["succeeded_mbs"] == 400 and shown["total_mbs"] == 400
    assert shown["stale_status_ignored"] is True and "not_a_field" not in shown
    old = reconcile(doc, {"state": "Completed", "reason": ""})
    assert old["succeeded_mbs"] == 45 and old["state"] == "Completed"


@pytest.mark.parametrize(("start", "now", "age"), [(100.0, 160.0, 60.0), (200.0, 150.0, 0.0)])
def test_job_age_from_its_recorded_start(start: float, now: float, age: float) -> None:
    """Elapsed time counts from the recorded start; a clock behind it gives 0, not less."""
    assert age_s(start, now) == age


def test_printable_names_show_odd_bytes() -> None:
    """A name that is not UTF-8 is shown with \\xNN escapes, as text any log can hold."""
    name = b"/in/bad\xff.txt".decode("utf-8", "surrogateescape")
    assert printable(name) == "/in/bad\\xff.txt"
    assert printable("/in/ok.txt") == "/in/ok.txt"
