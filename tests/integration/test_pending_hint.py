"""``tasks/pending.names``: the leader's hint of its outstanding task names, on real files."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from prsd.spool.layout import JobLayout, TaskName
from prsd.spool.pendinghint import MAX_NAMES, HintWriter, hint_path, read_hint

if TYPE_CHECKING:
    from pathlib import Path


def _layout(tmp_path: Path) -> JobLayout:
    layout = JobLayout(tmp_path / "job", "job")
    layout.tasks.mkdir(parents=True)
    return layout


def _names(*firsts: int, epoch: int = 1) -> list[str]:
    return [TaskName(i, 1, epoch).name for i in firsts]


def test_the_newest_names_are_written_and_read_back_in_order(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    writer = HintWriter(layout, interval_s=0.0)
    names = _names(*range(MAX_NAMES + 10))
    assert writer.publish(names, 0.0)
    assert [t.name for t in read_hint(layout)] == names[-MAX_NAMES:]


def test_a_hint_is_rewritten_only_when_the_names_changed_and_not_too_often(
    tmp_path: Path,
) -> None:
    layout = _layout(tmp_path)
    writer = HintWriter(layout, interval_s=1.0)
    assert writer.publish(_names(1, 2), 10.0)
    assert not writer.publish(_names(1, 2, 3), 10.5)  # too soon
    assert not writer.publish(_names(1, 2), 11.5)  # unchanged
    assert writer.publish(_names(2, 3), 11.5)
    assert [t.first_mb for t in read_hint(layout)] == [2, 3]
    assert writer.publish([], 13.0)  # nothing outstanding: an empty hint, not a stale one
    assert read_hint(layout) == []


def test_a_half_read_or_foreign_line_gives_only_the_whole_task_names(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    good = _names(5, 6)
    hint_path(layout).write_text(f"{good[0]}\n../../etc/passwd\n{good[1]}\n00000000")
    assert [t.name for t in read_hint(layout)] == good


def test_names_of_an_older_leader_are_left_out(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    HintWriter(layout).publish(_names(1, epoch=2) + _names(2, epoch=3), 0.0)
    assert [t.epoch for t in read_hint(layout, min_epoch=3)] == [3]


def test_no_hint_a_link_or_a_huge_file_reads_as_no_names(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    assert read_hint(layout) == []
    target = tmp_path / "elsewhere"
    target.write_text("\n".join(_names(1, 2)) + "\n")
    os.symlink(target, hint_path(layout))
    assert read_hint(layout) == []
    hint_path(layout).unlink()
    hint_path(layout).write_text((_names(1)[0] + "\n") * 100_000)
    assert read_hint(layout) == []
