"""Which keys a job spec may hold: prsd's canonical names, and the Azure-only ones.

Guarantees: a key is either known here (canonical, a v1 alias from
:mod:`prsd.jobspec.aliases`, or Azure-only and ignored) or an error that names it, its
line and the nearest known key. :data:`AZURE_ONLY` is the one table of keys accepted
and reported as ignored; docs/jobspec.md lists the same keys.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from prsd.jobspec.aliases import ALIASES
from prsd.jobspec.values import as_mapping, suggest
from prsd.jobspec.yamlsafe import Setting, Site, join_key

# Canonical keys (dotted below a section) whose values the loader reads.
CANONICAL = frozenset(
    {
        "type",
        "name",
        "inputs",
        "outputs",
        "input_data",
        "input_format",
        "mini_batch_size",
        "partition_keys",
        "partition_format",
        "resources.instance_count",
        "resources.max_concurrency_per_instance",
        "resources.max_memory_per_worker",  # a prsd extension: each worker's memory limit
        "mini_batch_error_threshold",
        "item_error_threshold",
        "allowed_failed_percent",
        "retry_settings.max_retries",
        "retry_settings.timeout",
        "logging_level",
        "resource_monitor_interval",
        "environment_variables",
        "side_inputs",
        "bisect_failed_mini_batches",
        "append_row_format",
        "output_action",  # v1 only: no v2 key says summary_only explicitly
        "append_row_file_name",  # v1 only
        "task.type",
        "task.code",
        "task.entry_script",
        "task.program_arguments",
        "task.append_row_to",
        "task.environment",
        "task.environment_variables",
    }
)
SECTIONS = frozenset({"resources", "retry_settings", "task"})

# Keys that only mean something on Azure: accepted, listed once in JobSpec.ignored.
AZURE_ONLY = frozenset(
    {
        "$schema",
        "compute",
        "compute_target",  # v1 ParallelRunConfig
        "identity",
        "is_deterministic",
        "display_name",
        "description",
        "tags",
        "experiment_name",
        "properties",
        "services",
        "version",  # a parallel component's version
        "resources.instance_type",
        "resources.shm_size",
        "resources.docker_args",
        "resources.properties",
        "task.model",
    }
)
# Keys of one entry of `inputs:` / `outputs:`; the Azure-only ones are ignored.
INPUT_KEYS = frozenset({"type", "path", "value", "default", "optional"})
INPUT_AZURE_ONLY = frozenset({"mode", "datastore", "description", "min", "max", "enum"})
OUTPUT_KEYS = frozenset({"type", "path"})
OUTPUT_AZURE_ONLY = frozenset({"mode", "name", "version", "description", "datastore"})
# Keys of an inline Azure environment (task.environment as a mapping).
ENVIRONMENT_AZURE_ONLY = frozenset(
    {
        "name",
        "version",
        "build",
        "description",
        "tags",
        "os_type",
        "inference_config",
        "datastore",
        "intellectual_property",
        "$schema",
    }
)
# Keys of a pipeline file (type: pipeline) around its jobs.
PIPELINE_KEYS = frozenset({"type", "name", "jobs", "inputs", "outputs"})
PIPELINE_AZURE_ONLY = AZURE_ONLY | {"settings", "default_compute", "default_datastore"}


@dataclass(frozen=True)
class Flat:
    """A job mapping flattened to canonical dotted keys.

    Attributes:
        settings: canonical key (``retry_settings.timeout``) -> value and site; aliases
            are still under their own names until :func:`apply_aliases` runs.
        ignored: Azure-only keys met, as written (dotted, with any prefix).
    """

    settings: dict[str, Setting]
    ignored: tuple[str, ...]


def flatten(job: dict[str, Any], site: Site) -> Flat:
    """Check every key of a parallel job mapping and flatten its sections.

    Args:
        job: the mapping of the parallel job (the whole file, or one pipeline step).
        site: where the mapping is (its key prefix: "" or ``jobs.<name>``).

    Raises:
        JobSpecError: an unknown key (with the nearest known one), or a section that is
            not a mapping.
    """
    settings: dict[str, Setting] = {}
    ignored: list[str] = []
    for key, value in job.items():
        here = site.child(key)
        if key in AZURE_ONLY:
            ignored.append(here.key)
        elif key in SECTIONS:
            _flatten_section(key, as_mapping(value, here), here, settings, ignored)
        elif key in CANONICAL or key in ALIASES:
            settings[key] = Setting(value, here)
        else:
            raise here.error(f"unknown key{_top_level_hint(key)}")
    return Flat(settings, tuple(ignored))


def _top_level_hint(key: str) -> str:
    """A near top-level key, or the section a nested key belongs in (``timeout``)."""
    nested = {k.rpartition(".")[2]: k for k in CANONICAL if "." in k}
    if key in nested and key not in ALIASES:
        return f" (it belongs under {nested[key].partition('.')[0]}:)"
    known = [k for k in CANONICAL | AZURE_ONLY | set(ALIASES) | SECTIONS if "." not in k]
    close = difflib.get_close_matches(key, list(nested), n=1, cutoff=0.6)
    return suggest(key, known) or (f" (did you mean {nested[close[0]]!r}?)" if close else "")


def _flatten_section(
    section: str,
    mapping: dict[str, Any],
    site: Site,
    settings: dict[str, Setting],
    ignored: list[str],
) -> None:
    for key, value in mapping.items():
        dotted = join_key(section, key)
        here = site.child(key)
        if dotted in AZURE_ONLY:
            ignored.append(here.key)
        elif dotted in CANONICAL or dotted in ALIASES:
            settings[dotted] = Setting(value, here)
        else:
            known = [
                k.partition(".")[2] for k in CANONICAL | AZURE_ONLY if k.startswith(section + ".")
            ]
            raise here.error(f"unknown key in {section}{suggest(key, known)}")


def check_entry_keys(
    entry: dict[str, Any], site: Site, known: frozenset[str], azure_only: frozenset[str]
) -> list[str]:
    """Check the keys of one input/output/environment entry.

    Returns:
        The Azure-only keys met, as dotted keys to list as ignored.

    Raises:
        JobSpecError: an unknown key.
    """
    met = []
    for key in entry:
        if key in azure_only:
            met.append(site.child(key).key)
        elif key not in known:
            raise site.child(key).error(f"unknown key{suggest(key, known | azure_only)}")
    return met
