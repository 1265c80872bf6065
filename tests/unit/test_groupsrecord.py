"""prsd/spool/groupsrecord.py: ``partitions/groups.json`` written whole and read back in order."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from prsd.spool.groupsrecord import GROUPS_RECORD, Group, read_groups, write_groups

if TYPE_CHECKING:
    from pathlib import Path


def test_groups_come_back_in_order(tmp_path: Path) -> None:
    groups: list[Group] = [
        ({"path": "groups/1.csv", "format": "csv", "rows": 3}, ["b", None]),
        ({"path": "groups/0.csv", "format": "csv", "rows": 1}, ["a", "1.5"]),
    ]
    path = tmp_path / GROUPS_RECORD
    write_groups(path, groups)
    assert read_groups(path) == groups
    assert [n for n in os.listdir(tmp_path) if n != GROUPS_RECORD] == []  # nothing aside left


def test_no_record_before_the_grouping_ended_and_a_torn_one_refused(tmp_path: Path) -> None:
    path = tmp_path / GROUPS_RECORD
    with pytest.raises(FileNotFoundError):
        read_groups(path)
    path.write_bytes(b'[[{"path": "g"}, ["a"]')
    with pytest.raises(ValueError):
        read_groups(path)
