"""prsd/spool/__init__.py's index of the spool's files stays true: every name the
three layouts give a path is in it, and every module it names exists."""

from __future__ import annotations

import inspect
import re
from functools import cached_property
from pathlib import Path

import prsd.spool
from prsd.spool.layout import JobLayout, SpoolLayout
from prsd.spool.pipelinelayout import PipelineLayout

ROOT = Path(__file__).resolve().parents[2]
PATH_TYPES = ("Path", "JobLayout", "PipelineLayout", "LogTree")
NOT_FILES = {"root", "top_dirs", "task_dirs", "daemon_names", "spool"}  # helpers, not names


def named_paths(cls: type) -> set[str]:
    """The public properties and methods of ``cls`` that give a path in the spool."""
    names = set()
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or name in NOT_FILES:
            continue
        if isinstance(member, property):
            func = member.fget
        elif isinstance(member, cached_property):
            func = member.func
        else:
            func = member
        returns = getattr(func, "__annotations__", {}).get("return")
        if returns in PATH_TYPES:
            names.add(name)
    return names


def test_every_layout_name_is_in_the_index() -> None:
    index = prsd.spool.__doc__ or ""
    quoted = set(re.findall(r"``([a-z_]+)``", index))
    for cls in (SpoolLayout, JobLayout, PipelineLayout):
        names = named_paths(cls)
        assert len(names) > 5, f"{cls.__name__}: the check found too few names: {names}"
        missing = sorted(names - quoted)
        assert not missing, f"{cls.__name__} names missing from prsd/spool's index: {missing}"


def test_every_module_the_index_names_exists() -> None:
    index = prsd.spool.__doc__ or ""
    paths = re.findall(r"``(prsd/[\w/]+(?:\.py)?)``", index)
    assert len(paths) > 20
    gone = [p for p in paths if not (ROOT / p).exists()]
    assert not gone, f"prsd/spool's index names modules that do not exist: {gone}"
