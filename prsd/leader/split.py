"""Splitting a file-list input into mini-batches, streaming (SPEC section 3).

The listing walks one directory at a time and sorts each directory's entries, so
the first mini-batch of a million-file input is planned after reading one
directory, and memory is bounded by the largest single directory. Entries are
ordered by ``name + "/"`` for folders, which makes the walk yield exactly the
sorted order of the full paths (``a.txt`` comes before ``a/b`` because ``.`` sorts
before ``/``).

Symlinks: a link to a regular file inside the input root is listed (by its own
path); links to folders are not followed (no cycles), and links that lead out of
the input root are skipped and reported through ``on_skip``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from prsd.storage.records import MiniBatch

SkipReporter = Callable[[str, str], None]


def _sort_key(entry: os.DirEntry[str]) -> str:
    return entry.name + "/" if entry.is_dir(follow_symlinks=False) else entry.name


def _inside(path: str, root: str) -> bool:
    real = os.path.realpath(path)
    return real == root or real.startswith(root.rstrip("/") + "/")


def iter_files(root: str, on_skip: SkipReporter | None = None) -> Iterator[str]:
    """Every regular file under ``root`` (a folder or a file), in sorted path order."""
    if not os.path.isdir(root):
        yield root
        return
    real_root = os.path.realpath(root)
    stack: list[Iterator[os.DirEntry[str]]] = [_sorted_entries(root)]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        if entry.is_dir(follow_symlinks=False):
            stack.append(_sorted_entries(entry.path))
        elif entry.is_symlink():
            if not entry.is_file() or not _inside(entry.path, real_root):
                if on_skip is not None:
                    on_skip(entry.path, "symlink leads out of the input folder or to a folder")
                continue
            yield entry.path
        elif entry.is_file(follow_symlinks=False):
            yield entry.path


def _sorted_entries(folder: str) -> Iterator[os.DirEntry[str]]:
    with os.scandir(folder) as it:
        entries = sorted(it, key=_sort_key)
    return iter(entries)


def iter_input_files(roots: Iterable[str], on_skip: SkipReporter | None = None) -> Iterator[str]:
    """Files of every input root in turn (roots in the order the spec gives them)."""
    for root in roots:
        yield from iter_files(root, on_skip)


def plan_file_batches(paths: Iterable[str], size: int, start: int = 0) -> Iterator[MiniBatch]:
    """Group paths into mini-batches of ``size`` files, numbered from 0 in input order.

    Mini-batches with an index below ``start`` are skipped (a restarted leader
    resuming its split) without being materialised.
    """
    if size < 1:
        raise ValueError(f"mini-batch size must be at least 1, not {size}")
    batch: list[str] = []
    index = 0
    for path in paths:
        batch.append(path)
        if len(batch) == size:
            if index >= start:
                yield MiniBatch(index, batch, len(batch))
            index += 1
            batch = []
    if batch and index >= start:
        yield MiniBatch(index, batch, len(batch))


def absolute(path: str) -> str:
    """An absolute, normalised path string."""
    return str(Path(path).absolute())
