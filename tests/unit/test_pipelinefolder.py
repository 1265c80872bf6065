"""One pipeline's folder through prsd/spool/pipelinefolder.py, over real files: what
the leader writes reads back, and a link or a torn file is never believed."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from prsd.spool.badrecord import BadRecord
from prsd.spool.dirfd import UnsafeFolder
from prsd.spool.endrecords import final_record
from prsd.spool.layout import SpoolLayout
from prsd.spool.pipelinefolder import PipelineFolder
from prsd.spool.pipelinerecord import PipelineRecord, StepRecord, pipelines_folder
from prsd.spool.pipelinestate import PipelineState
from prsd.spool.states import JobState

if TYPE_CHECKING:
    from pathlib import Path


def _pipeline(tmp_path: Path) -> PipelineFolder:
    spool = SpoolLayout(tmp_path / "spool")
    spool.root.mkdir()
    pipelines_folder(spool)
    folder = PipelineFolder(spool, "p-1")
    folder.layout.step("a").mkdir(parents=True)
    steps = {"a": StepRecord("a", "command", "p-1-a")}
    folder.layout.record.write_bytes(PipelineRecord("p-1", "pipe", "/f.yml", steps).to_json())
    return folder


def test_what_the_leader_writes_reads_back(tmp_path: Path) -> None:
    folder = _pipeline(tmp_path)
    assert folder.record().steps["a"].job_id == "p-1-a"
    assert folder.state() == PipelineState() and folder.final() is None and not folder.ended()
    assert folder.waiting("a") and not folder.waiting("b")
    assert folder.owner_uid() == os.getuid()
    final = final_record(JobState.FAILED, "step a failed", root_cause="step a failed")
    with folder.open() as opened:
        opened.write_state(PipelineState({"b": "not run: x"}, canceled=True))
        assert opened.move_step("a", folder.spool.inbox / "p-1-a") is False  # no inbox/
        folder.spool.inbox.mkdir()
        assert opened.move_step("a", folder.spool.inbox / "p-1-a") is True
        opened.write_final(final)
    assert folder.state() == PipelineState({"b": "not run: x"}, canceled=True)
    assert folder.final() == final and folder.ended()
    assert not folder.waiting("a") and (folder.spool.inbox / "p-1-a").is_dir()


def test_a_link_or_a_torn_file_is_not_believed(tmp_path: Path) -> None:
    folder = _pipeline(tmp_path)
    elsewhere = tmp_path / "final.json"
    elsewhere.write_bytes(final_record(JobState.COMPLETED, "all done").to_json())
    folder.layout.final.symlink_to(elsewhere)
    assert folder.final() is None  # a link is never followed
    assert folder.ended()  # but the name is taken: the desk leaves the pipeline alone
    folder.layout.final.unlink()
    folder.layout.final.write_bytes(b'{"state": "Completed"')
    assert folder.final() is None
    folder.layout.state.write_bytes(b'{"skipped": ["a"]}')
    assert folder.state() == PipelineState()  # no decision the leader could have written
    folder.layout.record.unlink()
    with pytest.raises(BadRecord):
        folder.record()


def test_a_link_in_place_of_the_folder_is_refused(tmp_path: Path) -> None:
    folder = _pipeline(tmp_path)
    other = PipelineFolder(folder.spool, "p-2")
    other.root.symlink_to(folder.root)
    with pytest.raises(UnsafeFolder):
        other.open()
    assert PipelineFolder(folder.spool, "p-3").owner_uid() == -1  # no folder: nobody's


def test_a_cancel_no_leader_acted_on_is_taken_back(tmp_path: Path) -> None:
    folder = _pipeline(tmp_path)
    assert not folder.cancel_asked()
    folder.ask_cancel()
    assert folder.cancel_asked()
    folder.withdraw_cancel()
    assert not folder.cancel_asked()
    folder.withdraw_cancel()  # none to take back: nothing happens
    folder.ask_cancel()
    with folder.open() as opened:
        opened.write_final(final_record(JobState.CANCELED, "Canceled by prsctl cancel."))
    folder.withdraw_cancel()  # acted on: the mark stays with the ended pipeline
    assert folder.cancel_asked()
