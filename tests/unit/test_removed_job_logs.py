"""An agent's last lines of a job whose folder was removed meanwhile (``prsctl gc`` of an
ended job while this node's workers retire) make no folder of the job again; a log
folder missing inside a job that is there is made, and never through a link.

Real folders and files; the job folder is removed as gc removes it.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

import pytest

from prsd.agent.nodelog import append_line, append_stamped, stamped
from prsd.spool.dirfd import UnsafeFolder
from prsd.spool.layout import SpoolLayout
from prsd.spool.nodereport import NodeReport, write_report

if TYPE_CHECKING:
    from pathlib import Path


def test_the_last_lines_of_a_removed_job_make_no_folder_of_it(tmp_path: Path) -> None:
    job = SpoolLayout(tmp_path / "spool").job("count-1")
    main = job.log_tree.root / "sys" / "node" / "gpu-2" / "_main.txt"
    main.parent.mkdir(parents=True)
    append_stamped(main, [stamped("process000 started")], job.root)
    assert main.read_text(encoding="utf-8").endswith("process000 started\n")
    shutil.rmtree(job.root)  # prsctl gc, the job having ended
    append_stamped(main, [stamped("process000 exits: retired")], job.root)
    append_line(main, "resource monitor: 1 samples every 600 s", job.root)  # its last line
    write_report(job.node_report("gpu-2"), NodeReport("gpu-2").encode())
    assert not job.root.exists()


def test_a_missing_log_folder_inside_the_job_is_made(tmp_path: Path) -> None:
    job = SpoolLayout(tmp_path / "spool").job("count-1")
    job.root.mkdir(parents=True)
    log = job.log_tree.root / "sys" / "node" / "gpu-1" / "process000.txt"
    append_stamped(log, [stamped("mini-batch 000000000 succeeded")], job.root)
    assert log.read_text(encoding="utf-8").endswith("succeeded\n")
    write_report(job.node_report("gpu-1"), NodeReport("gpu-1").encode())
    assert NodeReport.decode(job.node_report("gpu-1").read_bytes()).node_id == "gpu-1"


def test_a_log_folder_is_not_made_through_a_link(tmp_path: Path) -> None:
    job = SpoolLayout(tmp_path / "spool").job("count-1")
    job.root.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    job.log_tree.root.symlink_to(elsewhere)  # logs/ planted as a link
    log = job.log_tree.root / "sys" / "node" / "gpu-1" / "_main.txt"
    with pytest.raises(UnsafeFolder):
        append_stamped(log, [stamped("line")], job.root)
    assert list(elsewhere.iterdir()) == []
