"""A step's component file merged under the step's own keys (Azure's component schema).

Guarantees: the component is read with the job loader's safe YAML reader; its relative
paths (``code``, ``task.code``, ``conda_file``, input defaults) are made absolute
against the component's own folder, so the merged step reads the same wherever it is
written; the step's keys win over the component's (mappings merged key by key, an
``environment`` replaced whole); a step input or output the component does not
declare is an error naming it. Errors name the pipeline file, the step and the key.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prsd.errors import JobSpecError
from prsd.jobspec.paths import is_remote, local_text
from prsd.jobspec.ports import LITERAL_TYPES
from prsd.jobspec.values import as_mapping, as_str, suggest
from prsd.jobspec.yamlsafe import read_yaml

if TYPE_CHECKING:
    from prsd.jobspec.yamlsafe import Site

_PATH_KEYS: tuple[tuple[str, ...], ...] = (
    ("code",),
    ("task", "code"),
    ("environment", "conda_file"),
    ("task", "environment", "conda_file"),
)
_REPLACED = frozenset({"environment"})
_DECLARATION_ONLY = frozenset({"description", "optional", "min", "max", "enum"})


def load_component(text: Any, base: Path, site: Site, kind: str) -> dict[str, Any]:
    """The component named by a step's ``component:`` key, paths made absolute.

    Raises:
        JobSpecError: a registered component (``azureml:...``), a file that is missing
            or does not parse, or a component of another type than the step's.
    """
    name = as_str(text, site, "the component's file (component: ./train.yml)")
    local = local_text(name)
    if is_remote(name) or local.startswith("azureml:"):
        raise site.error(
            f"{name!r} is a registered component; prsd reads components from files "
            "(component: ./component.yml)"
        )
    path = Path(os.path.normpath(base / local))
    if not path.is_file():
        raise site.error(f"the component file {path} does not exist")
    try:
        data = read_yaml(path, what="component").data
    except JobSpecError as exc:
        raise site.error(f"cannot read the component file: {exc}") from None
    comp = as_mapping(data, site, f"a component file holding a mapping ({path})")
    found = comp.get("type", kind)
    if not isinstance(found, str) or found.strip().lower() != kind:
        raise site.error(f"the component is of type {found!r}, but the step is type: {kind}")
    return absolute_paths(comp, path.parent)


def absolute_paths(comp: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A copy of ``comp`` with its relative local paths made absolute against ``folder``."""
    out = copy.deepcopy(comp)
    for keys in _PATH_KEYS:
        node: Any = out
        for key in keys[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and isinstance(node.get(keys[-1]), str):
            node[keys[-1]] = _absolute(node[keys[-1]], folder)
    for entry in (out.get("inputs") or {}).values():
        if isinstance(entry, dict):
            for key in ("path", "default"):
                if isinstance(entry.get(key), str) and entry.get("type") not in LITERAL_TYPES:
                    entry[key] = _absolute(entry[key], folder)
    return out


def _absolute(text: str, folder: Path) -> str:
    local = local_text(text)
    if is_remote(text) or "${{" in text or os.path.isabs(local):
        return text
    return os.path.normpath(folder / local)


def merge(comp: dict[str, Any], step: dict[str, Any], site: Site) -> dict[str, Any]:
    """The step's keys over the component's.

    Raises:
        JobSpecError: the step gives an input or output the component does not declare.
    """
    out = {k: copy.deepcopy(v) for k, v in comp.items() if k not in ("inputs", "outputs")}
    for key, value in step.items():
        if key in ("component", "inputs", "outputs"):
            continue
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict) and key not in _REPLACED:
            out[key] = _deep(old, value)
        else:
            out[key] = copy.deepcopy(value)
    for section in ("inputs", "outputs"):
        declared = as_mapping(comp.get(section) or {}, site.child(section))
        given = as_mapping(step.get(section) or {}, site.child(section))
        out[section] = _ports(declared, given, site.child(section))
    return out


def _deep(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(old)
    for key, value in new.items():
        if isinstance(out.get(key), dict) and isinstance(value, dict) and key not in _REPLACED:
            out[key] = _deep(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _ports(declared: dict[str, Any], given: dict[str, Any], site: Site) -> dict[str, Any]:
    for name in given:
        if name not in declared:
            hint = suggest(name, declared) or f" (it declares: {', '.join(declared) or 'none'})"
            raise site.child(name).error(f"the component declares no such name{hint}")
    out: dict[str, Any] = {}
    for name, decl in declared.items():
        decl = decl if isinstance(decl, dict) else {"type": "string", "default": decl}
        kind = decl.get("type", "uri_folder")
        if name not in given:
            kept = {k: v for k, v in decl.items() if k not in _DECLARATION_ONLY}
            if kind in LITERAL_TYPES:
                kept.pop("type", None)
                out[name] = kept.get("default", kept.get("value"))
            else:
                out[name] = kept
            continue
        value = given[name]
        if isinstance(value, dict):
            out[name] = {"type": kind, **value}
        elif kind in LITERAL_TYPES or not isinstance(value, str):
            out[name] = value
        else:
            out[name] = {"type": kind, "path": value}
    return out
