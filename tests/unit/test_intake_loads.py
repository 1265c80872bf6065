"""Spec loads beside the leader's round (prsd/leader/intake/loads.py): bounded, in order,
never waited for, and a load that outlives its limit is given up and frees its place.

Each load here opens a real FIFO of its job for reading, which blocks in the kernel
until the test opens the other end (as a call under a hung mount does)."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import pytest

from prsd.errors import InputError
from prsd.leader.intake.loads import IntakeLoads, Loading
from prsd.spool.jobowner import JobOwner
from prsd.spool.opening import open_spool
from tests.helpers import wait_until

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.jobspec import JobSpec
    from prsd.spool.layout import JobLayout


def _fifo_load(folder: Path) -> object:
    def load(layout: JobLayout) -> JobSpec:
        with open(folder / layout.job_id, "rb") as f:  # blocks until a writer opens it
            said = f.read().decode()
        raise InputError(f"{layout.job_id} loaded: {said}")

    return load


def _release(folder: Path, job_id: str) -> None:
    """Open the FIFO's other end once its load is waiting on it (ENXIO until then)."""

    def opened() -> bool:
        try:
            fd = os.open(folder / job_id, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return False
        os.write(fd, b"released")
        os.close(fd)
        return True

    wait_until(opened, 10, f"the load of {job_id} waiting on its FIFO")


def _collect(loads: IntakeLoads, want: int) -> list[Loading]:
    got: list[Loading] = []
    wait_until(lambda: len(got.__iadd__(loads.ready())) >= want, 10, f"{want} loads ended")
    return got


def _reason(item: Loading) -> str:
    with pytest.raises(InputError) as caught:
        item.spec()
    return caught.value.one_line()


def test_loads_are_bounded_in_order_and_never_waited_for(tmp_path: Path) -> None:
    spool = open_spool(tmp_path / "spool")
    fifos = tmp_path / "fifos"
    fifos.mkdir()
    for job_id in ("a", "b", "c"):
        os.mkfifo(fifos / job_id)
    loads = IntakeLoads(limit=2, load=_fifo_load(fifos))  # type: ignore[arg-type]
    owner = JobOwner(os.geteuid(), os.getegid(), "root")
    began = time.monotonic()
    for job_id in ("a", "b", "c"):
        loads.start(spool.job(job_id), owner)
    assert time.monotonic() - began < 1.0, "start() waited for a load"
    time.sleep(0.5)
    assert loads.ready() == []
    assert [bool(loads.loading[j].started) for j in "abc"] == [True, True, False]

    _release(fifos, "b")
    (b,) = _collect(loads, 1)
    assert _reason(b) == "b loaded: released"
    wait_until(lambda: bool(loads.loading["c"].started), 5, "c started in b's place")
    assert "b" not in loads and len(loads) == 2

    for job_id in ("c", "a"):  # c ends first, then a: both handed back in intake order
        _release(fifos, job_id)
        wait_until(loads.loading[job_id].future.done, 10, f"the load of {job_id} ended")
    got = loads.ready()
    assert [i.layout.job_id for i in got] == ["a", "c"]  # in the order taken in
    assert len(loads) == 0


def test_a_load_past_its_limit_is_given_up_and_frees_its_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRSD_SPEC_LOAD_TIMEOUT_S", "0.5")
    spool = open_spool(tmp_path / "spool")
    fifos = tmp_path / "fifos"
    fifos.mkdir()
    for job_id in ("hung", "next"):
        os.mkfifo(fifos / job_id)
    loads = IntakeLoads(limit=1, load=_fifo_load(fifos), grace_s=0.5)  # type: ignore[arg-type]
    owner = JobOwner(os.geteuid(), os.getegid(), "root")
    loads.start(spool.job("hung"), owner)
    loads.start(spool.job("next"), owner)
    try:
        (hung,) = _collect(loads, 1)
        assert hung.layout.job_id == "hung"
        assert "did not load within 1 s" in _reason(hung)
        wait_until(lambda: bool(loads.loading["next"].started), 5, "the next load started")
        _release(fifos, "next")
        (done,) = _collect(loads, 1)
        assert _reason(done) == "next loaded: released"
    finally:
        _release(fifos, "hung")  # its thread, left on its own, ends
