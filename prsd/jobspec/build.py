"""Scalar settings of a job spec, read into JobSpec fields (thresholds, retries, levels ...).

Guarantees: every value is type- and range-checked against Azure's documented ranges
and reported at the key as written; program-argument tuning wins over a YAML key that
says otherwise, with a note. Pure: no file access.
"""

from __future__ import annotations

import datetime
import math
import re
import unicodedata
from typing import TYPE_CHECKING, Any

from prsd.jobspec.model import (
    APPEND_ROW_FORMATS,
    DEFAULT_FILES_MINI_BATCH,
    DEFAULT_TABULAR_MINI_BATCH_BYTES,
    LOGGING_LEVELS,
)
from prsd.jobspec.said import NOT_USED, note
from prsd.jobspec.values import (
    as_bool,
    as_choice,
    as_concurrency,
    as_int,
    as_mapping,
    as_memory_size,
    as_number,
    as_str,
    as_timeout,
    files_batch_size,
    shown,
    tabular_batch_size,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from prsd.jobspec.yamlsafe import Setting, Site

MAX_NAME_CHARS = 255
_ENV_NAME = re.compile(r"^[^=\x00]+$")


def _count(minimum: int, expected: str) -> Callable[[Any, Site], int]:
    return lambda value, site: as_int(value, site, minimum=minimum, expected=expected)


def _percent(value: Any, site: Site) -> float:
    return as_number(
        value, site, low=0, high=100, low_open=False, expected="a percentage in [0, 100]"
    )


def _interval(value: Any, site: Site) -> float:
    expected = "a number of seconds >= 0 (0: off)"
    return as_number(value, site, low=0, high=math.inf, low_open=False, expected=expected)


def _level(value: Any, site: Site) -> str:
    if isinstance(value, str) and value.strip().upper() == "WARN":
        return "WARNING"
    return as_choice(value, site, LOGGING_LEVELS)


def _append_row_format(value: Any, site: Site) -> str:
    return as_choice(value, site, APPEND_ROW_FORMATS)


_THRESHOLD = "a count >= -1 (-1: ignore all failures)"
# canonical key -> (JobSpec field, reader)
SCALARS: dict[str, tuple[str, Callable[[Any, Site], Any]]] = {
    "resources.instance_count": ("instance_count", _count(1, "a number of nodes >= 1")),
    "resources.max_concurrency_per_instance": ("max_concurrency_per_instance", as_concurrency),
    "resources.max_memory_per_worker": ("max_memory_per_worker_bytes", as_memory_size),
    "mini_batch_error_threshold": ("mini_batch_error_threshold", _count(-1, _THRESHOLD)),
    "item_error_threshold": ("item_error_threshold", _count(-1, _THRESHOLD)),
    "allowed_failed_percent": ("allowed_failed_percent", _percent),
    "retry_settings.max_retries": ("max_retries", _count(0, "a number of retries >= 0")),
    "retry_settings.timeout": ("timeout_s", as_timeout),
    "logging_level": ("logging_level", _level),
    "resource_monitor_interval": ("resource_monitor_interval_s", _interval),
    "bisect_failed_mini_batches": ("bisect_failed_mini_batches", as_bool),
    "append_row_format": ("append_row_format", _append_row_format),
}


def scalar_fields(settings: Mapping[str, Setting]) -> dict[str, tuple[Any, str]]:
    """JobSpec field -> (value, key as written) for each scalar setting given.

    Raises:
        JobSpecError: a value of the wrong type or out of range.
    """
    out: dict[str, tuple[Any, str]] = {}
    for key, (name, read) in SCALARS.items():
        if key in settings:
            setting = settings[key]
            out[name] = (read(setting.value, setting.site), setting.site.key)
    return out


def check_types(settings: Mapping[str, Setting]) -> None:
    """``type`` must be ``parallel`` and ``task.type`` ``run_function`` when given.

    Raises:
        JobSpecError: another job or task type.
    """
    kind = settings.get("type")
    if kind is not None and not (
        isinstance(kind.value, str) and kind.value.strip().lower() == "parallel"
    ):
        raise kind.site.error(
            f"prsd runs parallel jobs only (type: parallel), got {shown(kind.value)}"
        )
    task_type = settings.get("task.type")
    if task_type is not None:
        # Older Azure SDKs wrote `function` for the same task type.
        as_choice(task_type.value, task_type.site, ("run_function", "function"))


def job_name(setting: Setting | None, default: str) -> str:
    """The job's name as written (default: the job folder's name).

    Raises:
        JobSpecError: empty, too long, or holding control or format characters.
    """
    if setting is None:
        return default
    value = setting.value
    # An unquoted number or date (name: 2024, name: 2024-06-30) is still a name.
    if isinstance(value, (int, datetime.date)) and not isinstance(value, bool):
        value = str(value)
    name = as_str(value, setting.site, "a name")
    bad = [c for c in name if unicodedata.category(c).startswith("C")]
    if bad:
        raise setting.site.error(f"contains the control character {bad[0]!r}; use printable text")
    if len(name) > MAX_NAME_CHARS:
        raise setting.site.error(
            f"is {len(name)} characters; at most {MAX_NAME_CHARS} are accepted"
        )
    return name


def mini_batch_size(
    setting: Setting | None, tabular: bool, partitioned: bool
) -> tuple[int, list[str]]:
    """Files per mini-batch (files) or bytes per mini-batch (tabular), and notes.

    Raises:
        JobSpecError: not a positive count (files), or not a size like ``10kb`` (tabular).
    """
    if setting is None:
        return (DEFAULT_TABULAR_MINI_BATCH_BYTES if tabular else DEFAULT_FILES_MINI_BATCH), []
    read = tabular_batch_size if tabular else files_batch_size
    size = read(setting.value, setting.site)
    if not partitioned:
        return size, []
    return size, [
        note(NOT_USED, f"{setting.site.key}: partition_keys make one mini-batch per key group")
    ]


def environment(settings: Mapping[str, Setting]) -> dict[str, str]:
    """``environment_variables`` (top level, Azure v2) merged with ``task.environment_variables``.

    Raises:
        JobSpecError: not a mapping, a bad name, a value that is not text or a number,
            or one variable given two different values.
    """
    merged: dict[str, tuple[str, Site]] = {}
    for key in ("environment_variables", "task.environment_variables"):
        if key not in settings:
            continue
        setting = settings[key]
        for name, value in as_mapping(
            setting.value, setting.site, "a mapping of NAME: value"
        ).items():
            site = setting.site.child(name)
            text = _env_value(name, value, site)
            if name in merged and merged[name][0] != text:
                raise site.error(
                    f"is also set to {merged[name][0]!r} by {merged[name][1].key}; keep one"
                )
            merged[name] = (text, site)
    return {name: text for name, (text, _) in merged.items()}


def _env_value(name: str, value: Any, site: Site) -> str:
    if not _ENV_NAME.match(name):
        raise site.error("is not a valid environment variable name")
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise site.error(f"expected text (quote it), got {shown(value)}")
    text = str(value)
    if "\x00" in text:
        raise site.error("contains a NUL character")
    return text


def merge_tuning(
    fields: dict[str, tuple[Any, str]], tuning: Mapping[str, tuple[Any, str]], arg_key: str
) -> tuple[dict[str, Any], list[str]]:
    """YAML-derived fields overlaid with program-argument tuning, and a note per conflict."""
    values = {name: value for name, (value, _) in fields.items()}
    notes = []
    for name, (value, flag) in tuning.items():
        if name in fields and fields[name][0] != value:
            notes.append(
                f"{arg_key} {flag} ({value!r}) overrides {fields[name][1]} ({fields[name][0]!r})"
            )
        values[name] = value
    return values, notes


def default_name(job_dir: Path, origin: Path | None) -> str:
    """The job folder's name (the original folder's, for a submitted job)."""
    return (origin or job_dir).name
