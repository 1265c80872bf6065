"""A v2 job object as Azure's pipeline YAML, by the SDK's own serialiser (``job._to_dict()``).

Guarantees: the mapping is the SDK's; only what a file in another folder needs is
changed: local input paths (which the SDK writes relative, sometimes as
``azureml:./data``) become absolute against the submitting process's folder, and an
inline ``component:`` mapping is written to ``components/<step>.yml`` beside the
pipeline file and named by path (both are Azure's schema). A lone parallel or
command job is wrapped as a one-step pipeline. Pure but for writing component files.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_REF = re.compile(r"^\s*\$\{\{")


def local_path(text: str, cwd: Path) -> str | None:
    """The absolute local path ``text`` means, or None for a reference, URI or asset."""
    if _REF.match(text) or _URI.match(text):
        return None
    bare = text.removeprefix("azureml:")
    bare = bare.removeprefix("file:")
    if bare.startswith(("./", "../", "/")) or (cwd / bare).exists():
        return str(Path(os.path.normpath(cwd / bare)))
    return None


def absolute_inputs(entries: Any, cwd: Path) -> Any:
    """``inputs`` with every local ``path`` made absolute."""
    if not isinstance(entries, dict):
        return entries
    out = {}
    for name, entry in entries.items():
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            found = local_path(entry["path"], cwd)
            entry = {**entry, "path": found} if found is not None else entry
        out[name] = entry
    return out


def pipeline_mapping(data: dict[str, Any], name: str) -> dict[str, Any]:
    """``data`` as a pipeline: a lone step job becomes a one-step pipeline named ``name``."""
    if data.get("type") == "pipeline":
        return data
    step = {k: v for k, v in data.items() if k not in ("name", "experiment_name", "display_name")}
    return {"type": "pipeline", "name": name, "jobs": {re.sub(r"\W", "_", name) or "job": step}}


def for_prsd(data: dict[str, Any], folder: Path, cwd: Path) -> dict[str, Any]:
    """The SDK's pipeline mapping ready to be written in ``folder`` (see the module docstring)."""
    out = dict(data)
    out["inputs"] = absolute_inputs(out.get("inputs"), cwd)
    jobs = {}
    for key, step in (out.get("jobs") or {}).items():
        step = dict(step)
        step["inputs"] = absolute_inputs(step.get("inputs"), cwd)
        comp = step.get("component")
        if isinstance(comp, dict):
            (folder / "components").mkdir(exist_ok=True)
            path = folder / "components" / f"{key}.yml"
            path.write_text(yaml.safe_dump(comp, sort_keys=False), encoding="utf-8")
            step["component"] = f"./components/{key}.yml"
        jobs[key] = {k: v for k, v in step.items() if v is not None}
    out["jobs"] = jobs
    return {k: v for k, v in out.items() if v is not None}
