"""The format of an input given no ``input_format`` and no MLTable: from its files' extensions.

Rules (docs/jobspec.md, "Input formats"):

- Plain files (``input_data: [a.csv, b.csv]``) whose extensions all map to one
  tabular format are that format.
- A plain folder, or an Azure ``uri_folder`` input, whose data files (names starting
  with ``.`` or ``_`` left out, as the splitter leaves them out) all have one tabular
  extension is a table of that format, so ``mini_batch_size: 64KB`` and
  ``partition_keys`` by column work on it as on one file. Two exceptions keep it a
  files input: a ``mini_batch_size`` that is a bare count without ``partition_keys``
  (Azure's meaning for a ``uri_folder``: files per mini-batch; a note says so) and a
  ``partition_format`` (keys taken from the folder layout).
- Mixed extensions, other extensions, an empty folder, a ``uri_file``: files.

Any file that breaks the rule makes the input files, wherever it stands, so the folder
is read as the file system lists it and the reading stops at the first such file: a
folder of a million images costs one directory read, not a listing and a sort of a
million names. A folder of tabular files is read up to :data:`MAX_LISTED` files, and
the files read decide (past that size, which files those are is the file system's
order).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from prsd.jobspec.said import NOTE, note
from prsd.spool.listing import scan

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "csv",
    ".parquet": "parquet",
    ".jsonl": "jsonl",
}
MAX_LISTED = 100_000
_COUNT = re.compile(r"^\s*\d+\s*$")


def infer_format(
    paths: list[tuple[Path, str | None]],
    *,
    mini_batch_size: Any = None,
    partition_format: bool = False,
    partition_keys: bool = False,
) -> tuple[str, str, list[str]]:
    """``(format, delimiter, notes)`` of entries ``(path, declared kind or None)``."""
    if any(kind not in (None, "uri_folder") for _, kind in paths):
        return "files", ",", []
    suffixes: set[str] = set()
    folders = [p for p, _ in paths if not p.is_file()]
    for path, kind in paths:
        if path.is_file() and kind is not None:
            return "files", ",", []  # a uri_folder naming one file: Azure's file list
        suffixes |= {path.suffix.lower()} if path.is_file() else _folder_suffixes(path)
        if _one_format(suffixes) is None or (folders and len(suffixes) > 1):
            return "files", ",", []
    fmt = _one_format(suffixes)
    if fmt is None:
        return "files", ",", []
    delimiter = "\t" if suffixes == {".tsv"} else ","
    if not folders:
        return fmt, delimiter, []
    what = f"{', '.join(str(p) for p in folders)} holds only {''.join(suffixes)} files"
    if partition_format:
        return "files", ",", []
    if _is_count(mini_batch_size) and not partition_keys:  # keys make the size moot
        return (
            "files",
            ",",
            [
                note(
                    NOTE,
                    f"input_data: {what}; read as files because mini_batch_size is a count "
                    f"(a size like 1MB, or input_format: {fmt}, reads them as one table)",
                )
            ],
        )
    return (
        fmt,
        delimiter,
        [
            note(
                NOTE,
                f"input_data: {what}; read as one {fmt} table "
                "(input_format: files gives run() their paths instead)",
            )
        ],
    )


def _one_format(suffixes: set[str]) -> str | None:
    formats = {EXTENSIONS.get(s) for s in suffixes}
    return formats.pop() if len(formats) == 1 else None


def _is_count(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, str) and bool(_COUNT.match(value)))


def _folder_suffixes(folder: Path) -> set[str]:
    """The extensions of the folder's data files; stops at a second one or a non-tabular one."""
    found: set[str] = set()
    for i, name in enumerate(_data_files(folder)):
        suffix = os.path.splitext(name)[1].lower()
        found.add(suffix)
        if len(found) > 1 or suffix not in EXTENSIONS or i >= MAX_LISTED:
            break
    return found


def _data_files(folder: Path) -> Iterator[str]:
    """The data files under ``folder`` (names starting with ``.`` or ``_`` left out, files
    and folders alike), in the order the file system lists them, read as they come: the
    first file of a folder of a million images costs one directory read, not a listing
    of all of them (the planner lists and sorts them once, later). An unreadable folder
    is passed over, as ``os.walk`` does."""
    folders = [str(folder)]
    while folders:
        try:
            for entry in scan(folders.pop()):
                if entry.name.startswith((".", "_")):
                    continue
                if entry.is_dir():
                    folders.append(entry.path)
                else:
                    yield entry.path
        except OSError:
            continue
