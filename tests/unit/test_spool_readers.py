"""The readers and writers of spool files that moved into prsd/spool: real files, links
and ownership (the tests run as root, so a file is given to another uid for real)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from prsd.spool.badrecord import BadRecord
from prsd.spool.endrecords import final_record
from prsd.spool.finalrecord import MAX_FINAL_BYTES, read_final_state
from prsd.spool.issuelog import IssueLog, read_issued
from prsd.spool.jobyaml import write_job_yaml
from prsd.spool.layout import JobLayout, SpoolLayout, TaskName
from prsd.spool.nodesview import NodesView, read_nodes_view
from prsd.spool.originrecord import Origin, read_origin_record, write_origin
from prsd.spool.readsafe import MissingFile, UntrustedFile
from prsd.spool.retryrecords import read_kept_text
from prsd.spool.specfile import read_spec
from prsd.spool.states import JobState

if TYPE_CHECKING:
    from pathlib import Path


def _job(tmp_path: Path) -> JobLayout:
    layout = SpoolLayout(tmp_path / "spool").job("j1")
    layout.state.mkdir(parents=True)
    return layout


def test_spec_json_missing_is_told_apart_from_a_link_and_a_foreign_file(tmp_path: Path) -> None:
    layout = _job(tmp_path)
    with pytest.raises(MissingFile):
        read_spec(layout, daemon_owned=False)
    real = tmp_path / "planted.json"
    real.write_bytes(b'{"planted": true}')
    layout.spec.symlink_to(real)
    with pytest.raises(UntrustedFile) as link:
        read_spec(layout, daemon_owned=False)
    assert not isinstance(link.value, MissingFile)  # an agent refuses it, not waits for it
    layout.spec.unlink()
    layout.spec.write_bytes(b'{"name": "x"}')
    assert read_spec(layout, daemon_owned=True) == b'{"name": "x"}'
    os.chown(layout.spec, 54321, 54321)
    assert read_spec(layout, daemon_owned=False) == b'{"name": "x"}'  # a client reads it
    with pytest.raises(UntrustedFile, match="not to the daemons"):
        read_spec(layout, daemon_owned=True)  # a leader does not believe it


def test_final_json_reads_back_and_refuses_what_is_no_final_record(tmp_path: Path) -> None:
    layout = _job(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_final_state(layout)
    final = final_record(JobState.FAILED, "broken", counts={"total": 3})
    layout.final.write_bytes(final.to_json())
    assert read_final_state(layout) == final
    layout.final.write_bytes(b"[]")
    with pytest.raises(BadRecord):
        read_final_state(layout)
    padded = final.to_json()[:-1] + b" " * MAX_FINAL_BYTES + b"}"  # valid JSON, too long
    layout.final.write_bytes(padded)
    with pytest.raises(BadRecord):
        read_final_state(layout)


def test_the_issue_log_reads_back_every_epoch_and_skips_a_torn_line(tmp_path: Path) -> None:
    layout = SpoolLayout(tmp_path / "spool").job("j1")  # no state/ yet: the log makes it
    first = IssueLog(layout, 1)
    first.add([TaskName(0, 1, 1).name, TaskName(4, 1, 1).name])
    first.close()
    first.close()  # a second close does nothing
    second = IssueLog(layout, 2)
    second.add([TaskName(4, 2, 2).name])
    second.close()
    with open(layout.issue_log(2), "ab") as f:
        f.write(b"00000000")  # a crash in mid-line
    assert oct(os.stat(layout.issue_log(1)).st_mode & 0o777) == oct(0o644 & ~_umask())
    assert read_issued(layout) == {TaskName(0, 1, 1), TaskName(4, 1, 1), TaskName(4, 2, 2)}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_staged_job_file_and_origin_read_back(tmp_path: Path) -> None:
    staged = JobLayout(tmp_path / "staging", "j2")
    staged.root.mkdir(parents=True)
    write_job_yaml(staged, "name: é\n")
    assert staged.job_yaml.read_bytes() == "name: é\n".encode()
    origin = Origin(str(tmp_path), "named", "sha256:00")
    write_origin(staged, origin)
    assert read_origin_record(staged.origin) == origin
    left = {p.name for p in staged.root.iterdir()}
    assert left == {"job.yaml", "origin.json"}  # no temp file left behind


def test_nodes_view_and_kept_text_say_when_there_is_none(tmp_path: Path) -> None:
    spool = SpoolLayout(tmp_path / "spool")
    with pytest.raises(FileNotFoundError):
        read_nodes_view(spool)
    spool.nodes_view.parent.mkdir(parents=True)
    view = NodesView(3, 30.0, {})
    spool.nodes_view.write_bytes(view.to_json())
    assert read_nodes_view(spool) == view
    spool.nodes_view.write_bytes(b"{}")
    with pytest.raises(BadRecord):
        read_nodes_view(spool)
    layout = _job(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_kept_text(layout)
    layout.retry_kept.write_text('{"job": "j0"}\n', encoding="utf-8")
    assert read_kept_text(layout) == '{"job": "j0"}\n'
