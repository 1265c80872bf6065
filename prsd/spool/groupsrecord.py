"""``partitions/groups.json``: the finished grouping of a table partitioned by keys.

A job whose input is grouped by ``partition_keys`` has its groups written as files
under ``jobs/<id>/partitions/groups/`` (prsd/inputsplit/tabular/groups.py); when the
last one is written, the list of groups is recorded here, one entry per group in
mini-batch order: the mini-batch's payload (an object) and the group's key values
(a list). A restarted leader finds the record and reuses the grouping instead of
grouping again while agents may still read the group files.

Promise: :func:`write_groups` writes the record atomically (a reader finds the whole
list or no file); :func:`read_groups` answers what was written, in order.

Errors: :func:`write_groups` raises ``OSError``; :func:`read_groups` raises
``OSError`` (``FileNotFoundError`` before the grouping ended) and ``ValueError``
for a file that is not JSON.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from prsd.spool.atomic import write_atomic

if TYPE_CHECKING:
    from pathlib import Path

GROUPS_RECORD = "groups.json"

Group = tuple[dict[str, Any], list[Any]]  # (payload, key values)


def write_groups(path: Path, groups: list[Group]) -> None:
    """Record ``groups`` (payload, key values), in mini-batch order, at ``path``."""
    write_atomic(path, json.dumps([[payload, key] for payload, key in groups]).encode())


def read_groups(path: Path) -> list[Group]:
    """The groups recorded at ``path``, in mini-batch order."""
    return [(payload, key) for payload, key in json.loads(path.read_bytes())]
