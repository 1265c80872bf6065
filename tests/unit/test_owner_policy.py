"""The one owner policy: ``owner.json`` or refuse, and what each caller makes of a refusal."""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING

import pytest

from prsd.errors import PrsdError
from prsd.leader.intake import outplace
from prsd.pipeline.view import job_owner_uid
from prsd.retryplan import kept
from prsd.spool import askers
from prsd.spool.askers import Person
from prsd.spool.jobowner import JobOwner, OwnerRecordError, owner, write_job_owner
from prsd.spool.layout import JobLayout, SpoolLayout

if TYPE_CHECKING:
    from pathlib import Path

JOB = "20260101-000000-aaaaaa"


def _job(tmp_path: Path) -> tuple[SpoolLayout, JobLayout]:
    spool = SpoolLayout(tmp_path / "spool")
    layout = spool.job(JOB)
    layout.root.mkdir(parents=True)
    return spool, layout


def test_owner_reads_the_record(tmp_path: Path) -> None:
    spool, layout = _job(tmp_path)
    write_job_owner(layout, JobOwner(4242, 4343, "carol"))
    assert owner(layout) == JobOwner(4242, 4343, "carol")
    assert askers.job_owner(spool, JOB) == Person(4242, "carol")
    assert job_owner_uid(spool, JOB) == 4242


def _bad_records(layout: JobLayout, tmp_path: Path) -> list[tuple[str, object]]:
    """Each way a record can be bad: (name, how to make it)."""

    def missing() -> None:
        layout.owner_record.unlink(missing_ok=True)

    def link() -> None:
        real = tmp_path / "elsewhere.json"
        real.write_bytes(JobOwner(7, 7, "x").to_json())
        layout.owner_record.symlink_to(real)

    def planted() -> None:
        layout.owner_record.write_bytes(JobOwner(7, 7, "x").to_json())
        os.chown(layout.owner_record, 4242, 4242)  # not the daemons' file

    def garbage() -> None:
        layout.owner_record.write_bytes(b'{"uid": "0"}')

    return [("missing", missing), ("link", link), ("planted", planted), ("garbage", garbage)]


@pytest.mark.parametrize("case", ["missing", "link", "planted", "garbage"])
def test_every_caller_refuses_a_bad_record(tmp_path: Path, case: str) -> None:
    """Never root's, never the folder's owner: each caller refuses in its own way."""
    spool, layout = _job(tmp_path)
    os.chown(layout.root, 4242, 4242)  # the folder's owner must never be believed
    make = dict(_bad_records(layout, tmp_path))[case]
    make()  # type: ignore[operator]
    with pytest.raises(OwnerRecordError):
        owner(layout)
    # requests: only root and admins may act on it
    assert askers.job_owner(spool, JOB) == Person(0, "root")
    # retries: refused with the reason
    with pytest.raises(PrsdError, match="a retry needs its owner"):
        kept.job_owner(layout)
    # the merge: no output written
    with pytest.raises(outplace.OutputRefused, match="output is not written"):
        outplace.output_place(layout, layout.root / "outputs" / "out.txt")
    # pipelines: never counted as anyone's step
    assert job_owner_uid(spool, JOB) is None


def test_a_queued_job_is_its_inbox_folders(tmp_path: Path) -> None:
    """Before intake there is no record: the folder the user dropped is what intake records."""
    spool = SpoolLayout(tmp_path / "spool")
    (spool.inbox / JOB).mkdir(parents=True)
    os.chown(spool.inbox / JOB, 4242, 4242)
    assert askers.job_owner(spool, JOB) == Person(4242, "4242")
    assert askers.job_owner(spool, "20260101-000000-bbbbbb") is None


def test_a_client_waits_out_the_moment_between_the_move_and_the_record(tmp_path: Path) -> None:
    """A leader moves the job out of the inbox, then records its owner: `prsctl status`
    right after `prsctl submit` waits for the record instead of calling the job root's;
    the leader's own round (no wait) and a record that never comes still say root."""
    spool, layout = _job(tmp_path)
    assert askers.job_owner(spool, JOB) == Person(0, "root")  # no wait: root at once
    writer = threading.Timer(0.3, write_job_owner, (layout, JobOwner(4242, 4343, "carol")))
    began = time.monotonic()
    writer.start()
    try:
        assert askers.job_owner(spool, JOB, wait_s=10) == Person(4242, "carol")
    finally:
        writer.join()
    assert 0.2 < time.monotonic() - began < 5
    layout.owner_record.unlink()
    began = time.monotonic()
    assert askers.job_owner(spool, JOB, wait_s=0.3) == Person(0, "root")
    assert time.monotonic() - began >= 0.3


def test_a_sealed_folder_without_a_record_is_waited_for_briefly(tmp_path: Path) -> None:
    """Not sealed yet (the submitter's folder): the whole wait; sealed (the daemons'),
    the record follows at once, so a missing one is waited for half a second at most
    (a job whose leader died mid-intake does not cost every `prsctl status` the wait)."""
    spool, layout = _job(tmp_path)
    os.chown(layout.root, 4242, 4242)  # moved out of the inbox, not sealed
    began = time.monotonic()
    assert askers.job_owner(spool, JOB, wait_s=1.5) == Person(0, "root")
    assert time.monotonic() - began >= 1.5
    os.chown(layout.root, 0, 0)  # sealed: the daemons' (they own jobs/)
    began = time.monotonic()
    assert askers.job_owner(spool, JOB, wait_s=30) == Person(0, "root")
    assert time.monotonic() - began < askers.SEALED_WAIT_S + 2
