"""``task.program_arguments``: the workers' ``sys.argv[1:]``, and the settings hidden in it.

Guarantees:
- Optional groups and ``${{...}}`` references are expanded (see :mod:`prsd.jobspec.refs`);
  each token is one argument, so a substituted path with spaces stays one argument.
- Tokens (and ``--flag=value`` values) that are relative paths starting with ``./`` or
  ``../``, or that equal the spec's text of a declared input path, become absolute paths
  under the same containment rules as every other path.
- Azure's system-tuning arguments are parsed and validated (and still passed on to the
  script); other Azure system arguments are listed as ignored; a ``--`` argument that
  is a near miss of one of them (Azure's own sample has ``--resource_monitor_interva``)
  gets a note.
"""

from __future__ import annotations

import difflib
import math
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prsd.jobspec.paths import Roots, resolve
from prsd.jobspec.refs import Refs, expand_groups, has_ref, substitute, tidy_refs
from prsd.jobspec.said import DID_YOU_MEAN, note
from prsd.jobspec.values import (
    as_bool,
    as_choice,
    as_int,
    as_number,
    as_str,
    as_timeout,
    files_batch_size,
    tabular_batch_size,
)
from prsd.jobspec.yamlsafe import Setting, Site

if TYPE_CHECKING:
    from pathlib import Path

Parse = Callable[[str, Site, bool], Any]


def _threshold(text: str, site: Site, _tabular: bool) -> int:
    """Azure's driver takes a float, rounds it up, and reads anything below -1 as -1."""
    number = as_number(text, site, low=-math.inf, high=math.inf, low_open=False, expected="a count")
    return max(-1, math.ceil(number))


def _percent(text: str, site: Site, _tabular: bool) -> float:
    return as_number(
        text, site, low=0, high=100, low_open=False, expected="a percentage in [0, 100]"
    )


def _count(text: str, site: Site, _tabular: bool) -> int:
    return as_int(text, site, minimum=-1, expected="a count >= -1 (-1: no limit)")


def _timeout(text: str, site: Site, _tabular: bool) -> float:
    return as_timeout(text, site)


def _interval(text: str, site: Site, _tabular: bool) -> float:
    expected = "a number of seconds >= 0 (0: off)"
    return as_number(text, site, low=0, high=math.inf, low_open=False, expected=expected)


def _profiler(text: str, site: Site, _tabular: bool) -> str:
    return as_choice(text, site, ("cProfile", "profile"))


def _tries(text: str, site: Site, _tabular: bool) -> int:
    return as_int(text, site, minimum=1, expected="a number of tries >= 1") - 1


def _batch(text: str, site: Site, tabular: bool) -> int:
    return tabular_batch_size(text, site) if tabular else files_batch_size(text, site)


def _flag(text: str, site: Site, _tabular: bool) -> bool:
    return as_bool(text, site)


# Azure's system arguments prsd honours: flag -> (JobSpec field, parser).
TUNING: dict[str, tuple[str, Parse]] = {
    "error_threshold": ("item_error_threshold", _threshold),
    "allowed_failed_percent": ("allowed_failed_percent", _percent),
    "allowed_failed_count": ("mini_batch_error_threshold", _count),
    "task_overhead_timeout": ("task_overhead_timeout_s", _timeout),
    "progress_update_timeout": ("progress_update_timeout_s", _timeout),
    "first_task_creation_timeout": ("first_task_creation_timeout_s", _timeout),
    "resource_monitor_interval": ("resource_monitor_interval_s", _interval),
    "profiling_module": ("profiling_module", _profiler),
    "run_invocation_timeout": ("timeout_s", _timeout),
    "score_run_timeout": ("timeout_s", _timeout),  # the driver's older name
    "run_max_try": ("max_retries", _tries),
    "mini_batch_size": ("mini_batch_size", _batch),
    "append_row_dataframe_header": ("append_row_dataframe_header", _flag),
}
# Azure's system arguments that mean nothing outside Azure: passed on, listed as ignored.
AZURE_ONLY_ARGS = frozenset(
    {
        "copy_logs_to_parent",
        "metrics_name_prefix",
        "push_metrics_to_parent",
        "nice",
        "cleanup_leaked_queues",
        "rank_mini_batch_count",
        "append_row_safe_output",
        "amlbi_async_mode",
        "amlbi_dataframe_mixed_types",
        "resume_from",
    }
)


@dataclass(frozen=True)
class Arguments:
    """The workers' arguments and what prsd read from them.

    Attributes:
        tokens: ``sys.argv[1:]`` of every worker.
        tuning: JobSpec field -> (value, flag as written) for each tuning argument.
        notes: near misses of system arguments.
        ignored: Azure-only system arguments met.
    """

    tokens: tuple[str, ...] = ()
    tuning: dict[str, tuple[Any, str]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()


@dataclass(frozen=True)
class PathContext:
    """What relative paths in arguments resolve against.

    Attributes:
        base: the folder relative input paths resolve against.
        roots: the allowed roots.
        known: spec text of each declared input path -> its absolute path.
    """

    base: Path
    roots: Roots
    known: Mapping[str, str]


def read_arguments(
    setting: Setting | None, refs: Refs, ctx: PathContext, tabular: bool
) -> Arguments:
    """Expand, rewrite and read ``task.program_arguments``.

    Args:
        setting: the value (a string, shell-split; or a list of strings), if given.
        refs: the ``${{...}}`` reference table.
        ctx: how relative paths resolve.
        tabular: whether the input is tabular (how ``--mini_batch_size`` reads).

    Raises:
        JobSpecError: unbalanced quotes or groups, an undeclared reference, a path that
            leaves the job folder, or a tuning argument with a bad value.
    """
    if setting is None or setting.value is None:
        return Arguments()
    site = setting.site
    tokens = [_token(t, refs, ctx, site) for t in _split(setting.value, refs, site)]
    tuning, notes, ignored = _read_system_args(tokens, site, tabular)
    return Arguments(tuple(tokens), tuning, tuple(notes), tuple(ignored))


def _split(value: Any, refs: Refs, site: Site) -> list[str]:
    if isinstance(value, list):
        return [as_str(v, site.item(i), "an argument (a string)") for i, v in enumerate(value)]
    text = expand_groups(tidy_refs(as_str(value, site, "a string of arguments")), refs, site)
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise site.error(f"cannot split the arguments: {exc}") from None


def _token(token: str, refs: Refs, ctx: PathContext, site: Site) -> str:
    if has_ref(token):
        return substitute(token, refs, site)
    flag, eq, value = token.partition("=")
    if eq and flag.startswith("-"):
        return f"{flag}={_rewrite(value, ctx, site)}"
    return _rewrite(token, ctx, site)


def _rewrite(value: str, ctx: PathContext, site: Site) -> str:
    if value in ctx.known:
        return ctx.known[value]
    if value.startswith(("./", "../")):
        return str(resolve(ctx.base, value, ctx.roots, site))
    return value


def _read_system_args(
    tokens: list[str], site: Site, tabular: bool
) -> tuple[dict[str, tuple[Any, str]], list[str], list[str]]:
    tuning: dict[str, tuple[Any, str]] = {}
    notes: list[str] = []
    ignored: list[str] = []
    for i, token in enumerate(tokens):
        if not token.startswith("--") or len(token) < 3:
            continue
        name, eq, value = token[2:].partition("=")
        if name in TUNING:
            text = value if eq else _next_value(tokens, i, site.labelled(f"{site.key} --{name}"))
            field, parse = TUNING[name]
            tuning[field] = (
                parse(text, site.labelled(f"{site.key} --{name}"), tabular),
                f"--{name}",
            )
        elif name in AZURE_ONLY_ARGS:
            ignored.append(f"{site.key} --{name}")
        else:
            notes.extend(_near_miss(name, site))
    return tuning, notes, ignored


def _next_value(tokens: list[str], i: int, site: Site) -> str:
    if i + 1 >= len(tokens):
        raise site.error("needs a value after it")
    return tokens[i + 1]


def _near_miss(name: str, site: Site) -> list[str]:
    close = difflib.get_close_matches(name, list(TUNING) + sorted(AZURE_ONLY_ARGS), 1, 0.85)
    if not close:
        return []
    return [
        note(
            DID_YOU_MEAN,
            f"{site.key}: --{name} is passed to the script but is not a system argument; "
            f"did you mean --{close[0]}?",
        )
    ]
