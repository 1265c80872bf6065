"""The one table of alias names: Azure v1 ``ParallelRunConfig`` names and Azure v2 spellings.

Guarantees: after :func:`apply_aliases`, a settings map holds canonical keys only, so
no other module ever sees an alias. An alias and its canonical key both given is an
error naming both. A value read through an alias still reports errors at the alias as
the user wrote it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prsd.jobspec.values import as_int
from prsd.jobspec.yamlsafe import Setting

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.jobspec.yamlsafe import Site


def _tries_to_retries(value: Any, site: Site) -> int:
    """v1 ``run_max_try`` counts tries (default 3); ``max_retries`` counts retries."""
    tries = as_int(value, site, minimum=1, expected="a number of tries >= 1 (run_max_try)")
    return tries - 1


@dataclass(frozen=True)
class Alias:
    """An accepted name for a canonical key.

    Attributes:
        canonical: the dotted canonical key.
        origin: where the name comes from, for messages ("v1", "Azure v2").
        convert: turns the alias's value into the canonical key's value.
    """

    canonical: str
    origin: str
    convert: Callable[[Any, Site], Any] | None = None


ALIASES: dict[str, Alias] = {
    "entry_script": Alias("task.entry_script", "v1"),
    "source_directory": Alias("task.code", "v1"),
    "arguments": Alias("task.program_arguments", "v1"),
    "task.args": Alias("task.program_arguments", "older Azure v2"),
    "environment": Alias("task.environment", "v1"),
    "node_count": Alias("resources.instance_count", "v1"),
    "process_count_per_node": Alias("resources.max_concurrency_per_instance", "v1"),
    "max_concurrency_per_instance": Alias("resources.max_concurrency_per_instance", "Azure v2"),
    "error_threshold": Alias("item_error_threshold", "v1 and Azure v2"),
    "allowed_failed_count": Alias("mini_batch_error_threshold", "v1"),
    "run_invocation_timeout": Alias("retry_settings.timeout", "v1"),
    "run_max_try": Alias("retry_settings.max_retries", "v1", _tries_to_retries),
}


def apply_aliases(settings: dict[str, Setting]) -> dict[str, Setting]:
    """The same settings under canonical keys only.

    Raises:
        JobSpecError: an alias and its canonical key (or two aliases of one key) are
            both given; or an alias's value cannot be converted.
    """
    out = {k: s for k, s in settings.items() if k not in ALIASES}
    for name, setting in settings.items():
        alias = ALIASES.get(name)
        if alias is None:
            continue
        other = out.get(alias.canonical)
        if other is not None:
            raise setting.site.error(
                f"{setting.site.key} ({alias.origin} name) and {other.site.key} "
                f"(line {other.site.doc.line_of(other.site.key)}) set the same thing; keep one"
            )
        value = alias.convert(setting.value, setting.site) if alias.convert else setting.value
        out[alias.canonical] = Setting(value, setting.site)
    return out
