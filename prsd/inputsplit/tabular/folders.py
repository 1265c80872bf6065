"""Files grouped by partition values in their paths (``partition_format`` + ``partition_keys``).

``partition_format: "{user}/{season}/{genre}.wav"`` is matched against each file's
path relative to its input folder: a ``{name}`` takes one path segment (or part of
one), the rest must match literally. A file that does not match is skipped and
reported. One mini-batch per distinct combination of the ``partition_keys`` values,
in order of first appearance in the sorted listing; ``run()`` gets the group's paths
and ``partition_key_value`` the values, as strings (Azure's rule for folder values).

The whole listing is grouped before the first mini-batch is known (a group is
complete only when the listing is), so memory holds every matching path once.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from prsd.inputsplit.split import SkipReporter, iter_files
from prsd.wire.records import MiniBatch

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

_FIELD = re.compile(r"\{([^{}]*)\}")


def format_pattern(partition_format: str) -> re.Pattern[str]:
    """The regular expression a relative path must match.

    Raises:
        ValueError: a field is empty or named twice.
    """
    parts: list[str] = []
    names: set[str] = set()
    pos = 0
    text = partition_format.lstrip("/")
    for match in _FIELD.finditer(text):
        name = match.group(1).strip()
        if not name.isidentifier() or name in names:
            raise ValueError(f"partition_format field {{{name}}} must be a unique name")
        names.add(name)
        parts.append(re.escape(text[pos : match.start()]))
        parts.append(f"(?P<{name}>[^/]+?)")
        pos = match.end()
    parts.append(re.escape(text[pos:]))
    return re.compile("".join(parts))


def key_values(
    rel_path: str, pattern: re.Pattern[str], keys: Sequence[str]
) -> tuple[str, ...] | None:
    """The values of ``keys`` in ``rel_path`` (``/``-separated), or None if it does not match."""
    match = pattern.fullmatch(rel_path)
    if match is None:
        return None
    return tuple(match.group(k) for k in keys)


def group_files(
    files: Iterable[tuple[str, str]],
    pattern: re.Pattern[str],
    keys: Sequence[str],
    on_skip: SkipReporter | None = None,
) -> Iterator[MiniBatch]:
    """Mini-batches of ``(path, relative path)`` pairs grouped by their key values."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for path, rel in files:
        values = key_values(rel, pattern, keys)
        if values is None:
            if on_skip is not None:
                on_skip(path, "does not match partition_format")
            continue
        groups.setdefault(values, []).append(path)
    for index, (values, paths) in enumerate(groups.items()):
        yield MiniBatch(index, paths, len(paths), dict(zip(keys, values, strict=True)))


def relative_files(
    roots: Iterable[str], on_skip: SkipReporter | None = None
) -> Iterator[tuple[str, str]]:
    """Every file of every root with its path relative to that root (``/``-separated)."""
    for root in roots:
        base = root if os.path.isdir(root) else os.path.dirname(root)
        for path in iter_files(root, on_skip):
            yield path, os.path.relpath(path, base).replace(os.sep, "/")


def plan_partitioned_files(
    roots: Sequence[str],
    partition_format: str,
    keys: Sequence[str],
    on_skip: SkipReporter | None = None,
) -> Iterator[MiniBatch]:
    """The mini-batches of a files input with ``partition_format`` and ``partition_keys``."""
    pattern = format_pattern(partition_format)
    return group_files(relative_files(roots, on_skip), pattern, keys, on_skip)
