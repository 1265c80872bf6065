"""Typed reading of one YAML value, with the error a user can act on.

Every function takes the value and the :class:`~prsd.jobspec.yamlsafe.Site` it was
written at, returns a checked Python value, and raises a JobSpecError naming the key,
the file and line, what was found and what is expected. Pure: no file access.
"""

from __future__ import annotations

import difflib
import math
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

    from prsd.jobspec.yamlsafe import Site

MAX_TIMEOUT_S = 259200.0  # Azure's upper bound for every timeout: 3 days
# Worker processes per node a job may ask for: far above any machine's cores or GPUs
# (each agent clamps further to its own slot cap), far below what hangs an agent.
MAX_CONCURRENCY_PER_INSTANCE = 1024
_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]b)?\s*$", re.IGNORECASE)
_COUNT = re.compile(r"^\s*\d+\s*$")
_UNITS = {"": 1, "kb": 1024, "mb": 1024**2, "gb": 1024**3}


def shown(value: Any) -> str:
    """A value as a message shows it: strings quoted, containers named by type."""
    if isinstance(value, str):
        return repr(value) if len(value) <= 60 else repr(value[:57] + "...")
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    return repr(value)


def suggest(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when ``name`` is a near miss of a known name, else ""."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def as_str(value: Any, site: Site, expected: str = "a string") -> str:
    """A non-empty string.

    Raises:
        JobSpecError: anything else.
    """
    if not isinstance(value, str) or not value.strip():
        raise site.error(f"expected {expected}, got {shown(value)}")
    if "\x00" in value:
        raise site.error("contains a NUL character")
    return value


def as_mapping(value: Any, site: Site, expected: str = "a mapping of keys") -> dict[str, Any]:
    """A mapping (``None`` reads as an empty one, as an empty YAML section does).

    Raises:
        JobSpecError: anything else.
    """
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise site.error(f"expected {expected}, got {shown(value)}")
    return value


def as_bool(value: Any, site: Site) -> bool:
    """A YAML boolean (``true``/``false``), or the text ``True``/``False``.

    Raises:
        JobSpecError: anything else.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise site.error(f"expected true or false, got {shown(value)}")


def as_int(value: Any, site: Site, *, minimum: int, expected: str) -> int:
    """An integer >= ``minimum``; numeric strings and integral floats are accepted.

    Raises:
        JobSpecError: not an integer, or below ``minimum``.
    """
    number = _number(value)
    if number is None or not float(number).is_integer():
        raise site.error(f"expected {expected}, got {shown(value)}")
    result = int(number)
    if result < minimum:
        raise site.error(f"expected {expected}, got {result}")
    return result


def as_number(
    value: Any, site: Site, *, low: float, high: float, low_open: bool, expected: str
) -> float:
    """A finite number in ``[low, high]`` (``(low, high]`` when ``low_open``).

    Raises:
        JobSpecError: not a number, or out of range.
    """
    number = _number(value)
    if number is None:
        raise site.error(f"expected {expected}, got {shown(value)}")
    result = float(number)
    too_low = result <= low if low_open else result < low
    if too_low or result > high:
        raise site.error(f"expected {expected}, got {number}")
    return result


def as_concurrency(value: Any, site: Site) -> int:
    """``max_concurrency_per_instance``: worker processes per node, 1 to 1024.

    Raises:
        JobSpecError: not an integer, below 1, or above :data:`MAX_CONCURRENCY_PER_INSTANCE`.
    """
    bound = MAX_CONCURRENCY_PER_INSTANCE
    expected = f"a number of worker processes from 1 to {bound}"
    count = as_int(value, site, minimum=1, expected=expected)
    if count > bound:
        raise site.error(
            f"expected {expected}, got {count}: at most {bound} workers per node "
            "(each agent runs no more than its own slot cap, PRSD_MAX_WORKERS_PER_NODE)"
        )
    return count


MIN_WORKER_MEMORY_BYTES = 64 * 1024**2  # an interpreter with the worker host needs ~30 MB
_MEMORY = re.compile(r"^\s*(\d+)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)


def as_memory_size(value: Any, site: Site) -> int:
    """``resources.max_memory_per_worker``: bytes from ``8G``, ``512MiB``, ``"200MB"`` or an int.

    Raises:
        JobSpecError: not a size (1024-based units K, M, G, T), or below 64 MiB.
    """
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    match = _MEMORY.match(text) if isinstance(text, str) else None
    if match is None:
        raise site.error(f"expected a memory size such as '512M' or '8G', got {shown(value)}")
    unit = match.group(2).lower()
    size = int(match.group(1)) * (1 << (10 * ("kmgt".index(unit) + 1 if unit else 0)))
    if size < MIN_WORKER_MEMORY_BYTES:
        raise site.error(
            f"expected at least 64M (a worker's interpreter needs that), got {shown(value)}"
        )
    return size


def as_timeout(value: Any, site: Site) -> float:
    """Seconds in Azure's range for timeouts, (0, 259200].

    Raises:
        JobSpecError: not a number, or out of range.
    """
    expected = f"a number of seconds in (0, {MAX_TIMEOUT_S:g}]"
    return as_number(value, site, low=0.0, high=MAX_TIMEOUT_S, low_open=True, expected=expected)


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            parsed = float(value.strip())
        except ValueError:
            return None
        if not math.isfinite(parsed):
            return None
        return int(parsed) if _COUNT.match(value) else parsed
    return None


def as_str_list(value: Any, site: Site, expected: str) -> list[str]:
    """A list of distinct non-empty strings.

    Raises:
        JobSpecError: not a list, an item that is not a string, or a repeated item.
    """
    if not isinstance(value, list) or not value:
        raise site.error(f"expected {expected}, got {shown(value)}")
    items = [as_str(v, site.item(i), "a string") for i, v in enumerate(value)]
    for i, item in enumerate(items):
        if item in items[:i]:
            raise site.item(i).error(f"{item!r} is listed twice")
    return items


def as_choice(value: Any, site: Site, choices: Iterable[str]) -> str:
    """One of ``choices`` (case-insensitive); returns the choice as spelled there.

    Raises:
        JobSpecError: anything else.
    """
    options = list(choices)
    if isinstance(value, str):
        for option in options:
            if value.strip().lower() == option.lower():
                return option
    listed = " | ".join(options)
    hint = suggest(value, options) if isinstance(value, str) else ""
    raise site.error(f"expected one of {listed}, got {shown(value)}{hint}")


def files_batch_size(value: Any, site: Site) -> int:
    """``mini_batch_size`` of a files input: a positive count of files.

    Raises:
        JobSpecError: not a positive integer (a size like ``10kb`` included).
    """
    if isinstance(value, str) and _SIZE.match(value) and not _COUNT.match(value):
        raise site.error(
            f"expected a count of files for a files input, got {shown(value)}; "
            "sizes like '10kb' apply to tabular inputs: set input_format (csv, parquet or "
            "jsonl) to read the files as a table, or give a count of files"
        )
    return as_int(value, site, minimum=1, expected="a positive count of files")


def tabular_batch_size(value: Any, site: Site) -> int:
    """``mini_batch_size`` of a tabular input: bytes from ``"100kb"``, ``"1MB"``, ``1024``.

    Raises:
        JobSpecError: not of the form ``<digits>[kb|mb|gb]`` (1024-based), or zero.
    """
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    match = _SIZE.match(text) if isinstance(text, str) else None
    if match is None:
        raise site.error(
            f"expected a size such as '512kb', '10MB' or '1gb' (bytes, 1024-based), "
            f"got {shown(value)}"
        )
    size = int(match.group(1)) * _UNITS[(match.group(2) or "").lower()]
    if size <= 0:
        raise site.error(f"expected a positive size, got {shown(value)}")
    return size
