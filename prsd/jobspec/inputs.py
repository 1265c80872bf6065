"""The input that is split (``input_data``), its format, its partitioning, and side inputs.

Guarantees: every path in the result is absolute and exists; the format is explicit
(``input_format``), else the MLTable's read transformation, else inferred from file
extensions (:mod:`prsd.jobspec.infer`: plain files or a folder of one tabular
extension), else ``files``; an Azure ``uri_file`` input stays ``files``, as Azure
hands it to ``run()`` as a file list. Partition keys and format are checked
against each other without reading any data.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from prsd.jobspec.infer import infer_format
from prsd.jobspec.mltable import Table, mltable_folder, read_mltable
from prsd.jobspec.model import INPUT_FORMATS, InputSpec
from prsd.jobspec.paths import Roots, must_exist, resolve
from prsd.jobspec.refs import Refs, exact_ref, has_ref, substitute, undefined
from prsd.jobspec.values import as_choice, as_mapping, as_str, as_str_list

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from prsd.jobspec.ports import Port
    from prsd.jobspec.yamlsafe import Setting, Site

_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


@dataclass(frozen=True)
class Entry:
    """One entry of ``input_data``: its absolute path and declared type (None: a plain path)."""

    path: Path
    kind: str | None
    port: str | None
    site: Site
    text: str | None = None  # the path as written, for a plain path


@dataclass
class InputPlan:
    """The split input and what else the loader needs from the inputs.

    Attributes:
        input: the InputSpec.
        side_inputs: name -> absolute path of every other data input.
        known: spec text of each input path -> its absolute path (for arguments).
        notes: things to tell the user once.
    """

    input: InputSpec
    side_inputs: dict[str, str] = field(default_factory=dict)
    known: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class InputContext:
    """What input paths resolve against and refer to."""

    base: Path
    roots: Roots
    ports: Mapping[str, Port]
    resolved: Mapping[str, Path | None]
    refs: Refs


def plan_input(settings: Mapping[str, Setting], ctx: InputContext, job_site: Site) -> InputPlan:
    """Read ``input_data``, ``input_format``, partitioning and ``side_inputs``.

    Raises:
        JobSpecError: a missing ``input_data``, a path that is missing or not allowed,
            a reference to an undeclared or empty input, a bad format, or partition
            settings that do not fit the input.
    """
    if "input_data" not in settings or settings["input_data"].value is None:
        raise job_site.labelled("input_data").error(
            "required: the data to split into mini-batches (a path, a list of paths, "
            "or ${{inputs.NAME}})"
        )
    entries = _entries(settings["input_data"], ctx)
    spec, notes = _input_spec(entries, settings, ctx.roots)
    spec = _partitioning(spec, settings)
    plan = InputPlan(spec, notes=notes)
    _side_inputs(plan, settings.get("side_inputs"), entries, ctx)
    plan.known.update(_known_paths(ctx, entries))
    return plan


def _entries(setting: Setting, ctx: InputContext) -> list[Entry]:
    value = setting.value
    if isinstance(value, list):
        if not value:
            raise setting.site.error("expected at least one path, got an empty list")
        return [_entry(v, setting.site.item(i), ctx) for i, v in enumerate(value)]
    return [_entry(value, setting.site, ctx)]


def _entry(value: Any, site: Site, ctx: InputContext) -> Entry:
    text = as_str(value, site, "a path or ${{inputs.NAME}}")
    name = exact_ref(text)
    if name is not None:
        return _port_entry(name, site, ctx)
    written = None if has_ref(text) else text
    if has_ref(text):
        text = substitute(text, ctx.refs, site)
    path = must_exist(resolve(ctx.base, text, ctx.roots, site), site)
    return Entry(path, None, None, site, written)


def _port_entry(ref: str, site: Site, ctx: InputContext) -> Entry:
    section, _, name = ref.partition(".")
    if section == "outputs":
        raise site.error(f"${{{{{ref}}}}} is an output; expected ${{{{inputs.NAME}}}}")
    port = ctx.ports.get(name) if section == "inputs" else None
    if port is None:
        raise undefined(ref, site)
    path = ctx.resolved.get(name)
    if port.literal or path is None:
        what = "a literal" if port.literal else "declared without a path"
        raise site.error(f"${{{{{ref}}}}} is {what}; input_data needs a data input with a path")
    return Entry(path, port.kind, name, site)


def _input_spec(
    entries: list[Entry], settings: Mapping[str, Setting], roots: Roots
) -> tuple[InputSpec, list[str]]:
    fmt_setting = settings.get("input_format")
    explicit = None
    if fmt_setting is not None:
        explicit = as_choice(fmt_setting.value, fmt_setting.site, INPUT_FORMATS)
    name = entries[0].port if len(entries) == 1 and entries[0].port else "input_data"
    table = _table(entries, explicit, roots)
    if table is not None:
        if fmt_setting is not None and explicit != table.format and table.format != "files":
            problem = f"is {explicit}, but the MLTable reads {table.format}; keep one"
            raise fmt_setting.site.error(problem)
        spec = InputSpec(table.paths, explicit or table.format, name, **table.options)
        return spec, list(table.notes)
    paths = tuple(str(e.path) for e in entries)
    if explicit is not None:
        tsv = explicit == "csv" and all(e.path.suffix.lower() == ".tsv" for e in entries)
        return InputSpec(paths, explicit, name, delimiter="\t" if tsv else ","), []
    size = settings.get("mini_batch_size")
    fmt, delimiter, notes = infer_format(
        [(e.path, e.kind) for e in entries],
        mini_batch_size=size.value if size is not None else None,
        partition_format="partition_format" in settings,
        partition_keys="partition_keys" in settings,
    )
    return InputSpec(paths, fmt, name, delimiter=delimiter), notes


def _table(entries: list[Entry], explicit: str | None, roots: Roots) -> Table | None:
    tables = []
    for entry in entries:
        folder = mltable_folder(entry.path)
        if entry.kind == "mltable" and folder is None:
            raise entry.site.error(f"is an mltable input, but {entry.path} holds no MLTable file")
        if folder is not None and (
            entry.kind == "mltable" or (entry.kind is None and explicit != "files")
        ):
            tables.append(folder)
    if not tables:
        return None
    if len(entries) > 1:
        raise entries[0].site.error("an MLTable input must be the only entry of input_data")
    return read_mltable(tables[0], roots)


def _partitioning(spec: InputSpec, settings: Mapping[str, Setting]) -> InputSpec:
    keys_setting, fmt_setting = settings.get("partition_keys"), settings.get("partition_format")
    if fmt_setting is not None:
        if spec.tabular:
            raise fmt_setting.site.error(
                "applies to files inputs only; a tabular input is partitioned by its columns"
            )
        if keys_setting is None:
            raise fmt_setting.site.error("needs partition_keys naming the keys to group by")
        partition_format = as_str(
            fmt_setting.value, fmt_setting.site, "a format like '{user}/{genre}.wav'"
        )
        spec = replace(spec, partition_format=partition_format)
    if keys_setting is None:
        return spec
    keys = as_str_list(keys_setting.value, keys_setting.site, "a list of key names")
    if not spec.tabular:
        _check_keys_in_format(keys, spec.partition_format, keys_setting.site)
    return spec


def _check_keys_in_format(keys: list[str], partition_format: str | None, site: Site) -> None:
    if partition_format is None:
        raise site.error(
            "a files input needs partition_format (like '{user}/{season}/{genre}.wav') "
            "naming where each key is in the folder layout"
        )
    named = set(_PLACEHOLDER.findall(partition_format))
    for i, key in enumerate(keys):
        if key not in named:
            raise site.item(i).error(
                f"{key!r} does not appear in partition_format {partition_format!r}"
            )


def _side_inputs(
    plan: InputPlan, setting: Setting | None, entries: list[Entry], ctx: InputContext
) -> None:
    main = {e.port for e in entries}
    for name, path in ctx.resolved.items():
        if name not in main and path is not None:
            plan.side_inputs[name] = str(path)
    if setting is None:
        return
    for name, value in as_mapping(setting.value, setting.site, "a mapping of name: path").items():
        site = setting.site.child(name)
        if name in ctx.ports:
            raise site.error(f"inputs.{name} already declares this name; rename one")
        entry = _entry(value, site, ctx)
        plan.side_inputs[name] = str(entry.path)
        _remember(plan.known, entry.text, entry.path)


def _known_paths(ctx: InputContext, entries: list[Entry]) -> dict[str, str]:
    known: dict[str, str] = {}
    for name, port in ctx.ports.items():
        path = ctx.resolved.get(name)
        if path is not None:
            _remember(known, port.text, path)
    for entry in entries:
        _remember(known, entry.text, entry.path)
    return known


def _remember(known: dict[str, str], text: str | None, path: Path) -> None:
    if text:
        known[text] = str(path)
        known[os.path.normpath(text)] = str(path)
