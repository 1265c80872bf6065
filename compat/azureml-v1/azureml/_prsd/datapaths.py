"""A dataset's ``path=`` argument as local folders and globs (pure but for listing files).

Guarantees: every form Azure's factories take (``(datastore, 'glob')``, a ``DataPath``,
a local path, a list of these) becomes a :class:`Source`: the folder the glob starts
in (its part before the first wildcard) and the glob relative to it. A
``partition_format`` written from the datastore's root is made relative to that
folder, since prsd matches it against paths under the input folder.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_WILD = re.compile(r"[*?\[]")
_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::[^}]*)?\}")


@dataclass(frozen=True)
class Source:
    """Files under ``folder`` matching ``pattern`` (``**`` when the path was a folder)."""

    folder: Path
    pattern: str
    root: Path  # the datastore's folder (or ``/``, the current folder) the path was written from

    def files(self) -> list[Path]:
        """The matching files, sorted."""
        found = glob.glob(self.pattern, root_dir=self.folder, recursive=True)
        return sorted(self.folder / f for f in found if (self.folder / f).is_file())


def sources(path: Any) -> list[Source]:
    """The sources of a factory's ``path`` argument.

    Raises:
        ValueError: a form that names no local place (a URL, an unknown object).
    """
    items = path if isinstance(path, list) else [path]
    return [_source(item) for item in items]


def _source(item: Any) -> Source:
    from azureml.core.datastore import DataPath, Datastore

    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Datastore):
        root, rel = item[0].folder, str(item[1])
    elif isinstance(item, DataPath):
        root, rel = item.datastore.folder, item.path_on_datastore
    elif isinstance(item, (str, os.PathLike)):
        text = os.fspath(item)
        if "://" in text:
            raise ValueError(f"{text!r} is a URL; prsd reads datastore folders and local paths")
        root = Path("/") if Path(text).is_absolute() else Path.cwd()
        rel = text.lstrip("/")
    else:
        raise ValueError(f"cannot read a dataset path from {item!r}")
    rel = rel.strip("/")
    parts = rel.split("/") if rel else []
    fixed = []
    for part in parts:
        if _WILD.search(part):
            break
        fixed.append(part)
    folder = Path(os.path.normpath(root / "/".join(fixed))) if fixed else root
    rest = "/".join(parts[len(fixed) :])
    if not rest:
        if folder.is_file():
            return Source(folder.parent, folder.name, root)
        rest = "**"
    return Source(folder, rest, root)


def relative_format(partition_format: str, source: Source) -> str:
    """``partition_format`` relative to ``source.folder`` (it may be written from its root)."""
    text = partition_format.lstrip("/")
    inside = source.folder != source.root and source.folder.is_relative_to(source.root)
    prefix = source.folder.relative_to(source.root).as_posix() if inside else ""
    if prefix and text.startswith(prefix + "/"):
        return text[len(prefix) + 1 :]
    return text


def format_keys(partition_format: str | None) -> list[str]:
    """The field names of a partition format, in order."""
    return _FIELD.findall(partition_format or "")


def format_regex(partition_format: str) -> re.Pattern[str]:
    """A regex matching a path against the format; its groups are the fields."""
    out, pos = [], 0
    for m in _FIELD.finditer(partition_format):
        out.append(re.escape(partition_format[pos : m.start()]))
        out.append(f"(?P<{m.group(1)}>[^/]+)")
        pos = m.end()
    out.append(re.escape(partition_format[pos:]))
    return re.compile("^" + "".join(out) + "$")
