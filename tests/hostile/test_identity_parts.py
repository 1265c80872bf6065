"""The parts of a job's identity, without daemons: ids, reserved names, trusted reads, sealing."""

from __future__ import annotations

import json
import os
import shutil
import stat
from typing import TYPE_CHECKING

import pytest

from prsd.leader.intake.intake import load_taken_job, ready_in_inbox, take_in
from prsd.leader.leader import Leader
from prsd.spool.jobid import (
    assign_job_id,
    base_name,
    ever_given,
    is_proposal,
    make_job_id,
    registry,
    release_job_id,
    reserve_job_id,
    settle_job_id,
    take_over_reservation,
)
from prsd.spool.jobowner import read_job_owner
from prsd.spool.jobroot import Entry, SealError, planted_names, seal_job_root
from prsd.spool.opening import open_spool
from prsd.spool.readsafe import UntrustedFile, read_small
from prsd.submit import submit
from tests.helpers import final_record
from tests.jobkit import make_job

if TYPE_CHECKING:
    from pathlib import Path

SCRIPT = """
def run(mini_batch):
    return mini_batch
"""

YAML = """
    input_data: ./data
    mini_batch_size: "2"
    task:
      code: ./code
      entry_script: score.py
"""


@pytest.mark.parametrize(
    ("name", "proposal"),
    [
        ("digits-20261124-101010-ab12", True),
        ("digits", False),  # a plain folder name: never an id
        ("Digits-20261124-101010-ab12", False),  # not a valid id
        ("digits-20261124-101010-ab12x", False),
        (".digits-20261124-101010-ab12", False),
    ],
)
def test_only_an_id_shaped_name_is_a_proposal(name: str, proposal: bool) -> None:
    """Hand-made names always get a fresh id."""
    assert is_proposal(name) is proposal


def test_base_name_drops_the_stamp() -> None:
    """A fresh id for an id-shaped folder name keeps its job name, not the old stamp."""
    assert base_name("digits-20261124-101010-ab12") == "digits"
    assert base_name("digits") == "digits"


@pytest.mark.parametrize(
    ("entries", "planted"),
    [
        ([Entry("job.yaml", False), Entry("code", True), Entry("data", True)], []),
        ([Entry("state", True), Entry("logs", False, True)], ["logs", "state"]),
        ([Entry("spec.json", False), Entry("owner.json", False)], ["owner.json", "spec.json"]),
        ([Entry("outputs", True)], []),  # a real outputs folder is the user's
        ([Entry("outputs", False, True)], ["outputs"]),  # a link in its place is not
        ([Entry("outputs", False)], ["outputs"]),
        ([Entry("partitions", True), Entry("work", True)], ["partitions", "work"]),
    ],
)
def test_planted_names(entries: list[Entry], planted: list[str]) -> None:
    """The daemons' names in a submitted folder are found, whatever they are."""
    assert planted_names(entries) == planted


def test_an_id_is_given_once(tmp_path: Path) -> None:
    """A proposal is kept once; the same name again, or an existing job's, gets a fresh id."""
    spool = open_spool(tmp_path / "spool")
    proposal = make_job_id("digits")
    assert assign_job_id(spool, proposal, "digits")[0] == proposal
    settle_job_id(spool, proposal)  # its folder moved in
    again, _ = assign_job_id(spool, proposal, "digits")
    assert again != proposal and again.startswith("digits-") and is_proposal(again)
    old = make_job_id("old")
    (spool.jobs / old).mkdir()  # a job from before the registry
    assert ever_given(spool, old) and not reserve_job_id(spool, old)
    assert assign_job_id(spool, old, "old")[0] != old


def test_a_reservation_left_by_a_killed_leader_is_taken_over(tmp_path: Path) -> None:
    """A leader killed between reserving the proposal and moving the folder: the next one
    keeps the id the submitter printed; once the folder moved, the id is never taken again,
    not even after the job is gone."""
    spool = open_spool(tmp_path / "spool")
    job_id, _ = submit(make_job(tmp_path, SCRIPT, YAML, files=2), spool)
    assert reserve_job_id(spool, job_id, job_id)  # the killed leader's first step
    layout = take_in(spool, job_id)
    assert layout is not None and layout.job_id == job_id
    assert (registry(spool) / job_id).read_bytes().startswith(b"given ")
    shutil.rmtree(layout.root)  # as prsctl gc does, after settling
    os.mkdir(spool.inbox / job_id)  # a folder named after the old id
    (spool.inbox / job_id / "job.yaml").write_text("entry_script: x.py\n")
    again = take_in(spool, job_id)
    assert again is not None and again.job_id != job_id


def test_an_empty_reservation_left_by_a_leader_killed_as_it_created_it_is_taken_over(
    tmp_path: Path,
) -> None:
    """Killed between the marker's O_EXCL create and its write: the marker is empty; the
    next leader still keeps the id the submitter printed."""
    spool = open_spool(tmp_path / "spool")
    job_id, _ = submit(make_job(tmp_path, SCRIPT, YAML, files=2), spool)
    registry(spool).mkdir(exist_ok=True)
    os.close(os.open(registry(spool) / job_id, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    assert take_over_reservation(spool, job_id) == b""
    layout = take_in(spool, job_id)
    assert layout is not None and layout.job_id == job_id
    assert (registry(spool) / job_id).read_bytes().startswith(b"given ")
    other = make_job_id("other")  # an empty marker of an id whose folder moved in: given
    (spool.jobs / other).mkdir()
    os.close(os.open(registry(spool) / other, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    assert take_over_reservation(spool, other) is None


def test_a_fresh_id_reservation_is_not_taken_over(tmp_path: Path) -> None:
    """Only a reservation made for the inbox folder of the same name can be taken over."""
    spool = open_spool(tmp_path / "spool")
    proposal = make_job_id("other")
    assert reserve_job_id(spool, proposal, "hand-made-folder")
    assert take_over_reservation(spool, proposal) is None
    held = reserve_job_id(spool, make_job_id("mine"), "mine")
    assert held is not None
    assert take_over_reservation(spool, proposal + "x") is None


def test_an_id_is_released_only_by_the_reservation_that_holds_it(tmp_path: Path) -> None:
    spool = open_spool(tmp_path / "spool")
    job_id = make_job_id("race")
    held = reserve_job_id(spool, job_id, job_id)
    assert held is not None
    settle_job_id(spool, job_id)  # another leader moved the folder in and settled the id
    release_job_id(spool, job_id, held)
    assert (registry(spool) / job_id).read_bytes() == b"given\n"
    fresh = make_job_id("race")
    mine = reserve_job_id(spool, fresh, fresh)
    assert mine is not None
    release_job_id(spool, fresh, mine)
    assert not os.path.lexists(registry(spool) / fresh)


def test_an_id_reserved_for_a_move_that_failed_is_given_back(tmp_path: Path) -> None:
    """Another leader took the folder first: no job has the id, the registry keeps nothing."""
    spool = open_spool(tmp_path / "spool")
    proposal = make_job_id("gone")
    assert take_in(spool, proposal) is None  # nothing in the inbox under that name
    assert not os.path.lexists(registry(spool) / proposal)


def test_read_small_refuses_links_fifos_foreign_and_big_files(tmp_path: Path) -> None:
    """Only a regular file of the daemons, within the bound, is believed."""
    good = tmp_path / "good.json"
    good.write_bytes(b"{}")
    assert read_small(good, 10, daemon_owned=True) == b"{}"
    link = tmp_path / "link.json"
    link.symlink_to(good)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * 11)
    for path, why in ((link, "cannot open"), (fifo, "not a regular file"), (big, "larger")):
        with pytest.raises(UntrustedFile, match=why):
            read_small(path, 10, daemon_owned=True)
    assert os.geteuid() == 0, "the foreign-owner case needs root (CI runs as root)"
    os.chown(good, 65534, 65534)
    with pytest.raises(UntrustedFile, match="not to the daemons"):
        read_small(good, 10, daemon_owned=True)
    assert read_small(good, 10, daemon_owned=False) == b"{}"


def test_seal_refuses_a_link_and_records_the_owner(tmp_path: Path) -> None:
    """The folder is looked at through one O_NOFOLLOW descriptor; its owner is recorded."""
    real = tmp_path / "real"
    real.mkdir()
    os.chown(real, 65534, 65534)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(SealError, match="cannot open the job folder"):
        seal_job_root(link)
    sealed = seal_job_root(real)
    assert (sealed.owner.uid, sealed.owner.gid) == (65534, 65534)
    info = os.lstat(real)
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, 0o711)


def test_submitted_job_keeps_its_id_and_is_sealed(tmp_path: Path) -> None:
    """prsctl submit's proposal is the id; intake records the owner and makes spec.json 0640."""
    spool = open_spool(tmp_path / "spool")
    job_id, _ = submit(make_job(tmp_path, SCRIPT, YAML, files=2), spool)
    staged = spool.inbox / job_id
    assert stat.S_IMODE(os.lstat(staged / "job.yaml").st_mode) & 0o007 == 0, "private copy"
    layout = take_in(spool, job_id)
    assert layout is not None and layout.job_id == job_id
    load_taken_job(layout)
    assert read_job_owner(layout).uid == os.geteuid()
    assert stat.S_IMODE(os.lstat(layout.spec).st_mode) == 0o640
    assert stat.S_IMODE(os.lstat(layout.logs).st_mode) == 0o750
    assert stat.S_IMODE(os.lstat(layout.outputs).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(layout.state).st_mode) == 0o755
    assert json.loads(layout.owner_record.read_bytes())["uid"] == os.geteuid()


def test_a_new_leader_resumes_only_from_a_spec_the_daemons_wrote(tmp_path: Path) -> None:
    """After a failover, a spec.json that is not the daemons' file is not believed: the job
    is not resumed from it but fails with a reason naming the file; a job whose spec is the
    daemons' own is resumed by the same leader."""
    spool = open_spool(tmp_path / "spool")
    planted, _ = submit(make_job(tmp_path / "a", SCRIPT, YAML, files=2), spool)
    honest, _ = submit(make_job(tmp_path / "b", SCRIPT, YAML, files=2), spool)
    layouts = {}
    for job_id in (planted, honest):
        layout = take_in(spool, job_id)
        assert layout is not None
        load_taken_job(layout)
        (spool.active / job_id).write_bytes(b"")
        layouts[job_id] = layout
    os.chown(layouts[planted].spec, 65534, 65534)  # as if the owner had replaced it
    leader = Leader(spool)
    leader.take_office(0.0)
    assert planted not in leader.drivers
    assert honest in leader.drivers
    final = json.loads(final_record(layouts[planted].state))
    assert final["state"] == "Failed"
    assert "could not be resumed" in final["reason"]
    assert "not to the daemons" in final["reason"]
    assert not (spool.active / planted).exists()
    for driver in leader.drivers.values():
        driver.abandon()


def test_an_inbox_name_that_is_not_utf8_never_stops_the_intake(tmp_path: Path) -> None:
    """The id registry records such a name as its bytes (no UnicodeEncodeError), and the
    leader's listing never offers such a folder as ready: it goes to the sweep."""
    spool = open_spool(tmp_path / "spool")
    odd = os.fsdecode(b"x\xff")
    job_id, held = assign_job_id(spool, odd, "x")
    assert b"for-inbox=x\xff\n" in held and job_id.startswith("x-")
    folder = spool.inbox / odd
    folder.mkdir()
    (folder / "job.yaml").write_text("type: parallel\n")
    others: list[tuple[str, int]] = []
    assert ready_in_inbox(spool, others) == []
    assert others == [(odd, os.lstat(folder).st_ino)]
