"""Azure v2 ``inputs:`` and ``outputs:`` declarations, and where each one lives on disk.

Guarantees: every declared input is a literal (text, number, bool) or a data input with
a type and a local path that exists, or is absent (declared without a path or value);
every output gets one absolute location inside the job's spool folder (or an allowed
absolute path), and an output whose path is a cloud location or missing is placed under
``outputs/<name>`` with a note saying so. Pipeline bindings (``${{parent.inputs.x}}``)
are resolved here, against the pipeline's own declarations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prsd.jobspec.paths import Roots, is_remote, local_text, must_exist, resolve
from prsd.jobspec.refs import exact_ref, undefined
from prsd.jobspec.said import REDIRECTED, note
from prsd.jobspec.schema import (
    INPUT_AZURE_ONLY,
    INPUT_KEYS,
    OUTPUT_AZURE_ONLY,
    OUTPUT_KEYS,
    check_entry_keys,
)
from prsd.jobspec.values import as_bool, as_choice, as_mapping, as_str, shown
from prsd.spool.layout import JobLayout

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from prsd.jobspec.yamlsafe import Setting, Site

PATH_TYPES = ("uri_folder", "uri_file", "mltable", "custom_model", "mlflow_model", "triton_model")
LITERAL_TYPES = ("string", "integer", "number", "boolean")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SAFE_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Port:
    """One declared input or output.

    Attributes:
        name: its name under ``inputs:`` / ``outputs:``.
        site: where its path or value was written.
        kind: a data type (``uri_folder``, ``uri_file``, ``mltable``, a model type) or
            ``literal``.
        text: the path as written (data), or None when absent.
        value: the literal's value (str, int, float, bool), or None when absent.
    """

    name: str
    site: Site
    kind: str
    text: str | None = None
    value: Any = None

    @property
    def literal(self) -> bool:
        return self.kind == "literal"


@dataclass
class Ports:
    """Declarations of one section, and the Azure-only keys met in it."""

    ports: dict[str, Port] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)


def parse_ports(section: Setting | None, parent: Mapping[str, Port], *, outputs: bool) -> Ports:
    """Read an ``inputs:`` or ``outputs:`` section.

    Args:
        section: the section, or None when the spec has none.
        parent: the pipeline's declarations by reference name (``parent.inputs.x``).
        outputs: True for ``outputs:``.

    Raises:
        JobSpecError: a bad name, an unknown key or type, or a binding to an undeclared
            pipeline input/output or to another pipeline step.
    """
    result = Ports()
    if section is None:
        return result
    for name, value in as_mapping(section.value, section.site).items():
        site = section.site.child(name)
        if not _NAME.match(name):
            raise site.error("names must be letters, digits and _, starting with a letter or _")
        read = _output if outputs else _input
        result.ports[name] = read(name, value, site, parent, result.ignored)
    return result


def _bound(name: str, text: str, site: Site, parent: Mapping[str, Port]) -> Port | None:
    ref = exact_ref(text)
    if ref is None:
        return None
    if ref not in parent:
        if ref.startswith("parent.") and not ref.startswith("parent.jobs."):
            section = ref.split(".")[1]
            raise site.error(f"${{{{{ref}}}}} is not declared in the pipeline's {section}:")
        raise undefined(ref, site)
    bound = parent[ref]
    # Errors about the path or value point where it is written: the pipeline's inputs.
    return Port(name, bound.site, bound.kind, bound.text, bound.value)


def _input(name: str, value: Any, site: Site, parent: Mapping[str, Port], ign: list[str]) -> Port:
    if value is None or isinstance(value, (str, int, float, bool)):
        bound = _bound(name, value, site, parent) if isinstance(value, str) else None
        return bound or Port(name, site, "literal", value=value)
    entry = as_mapping(value, site, "a literal or a mapping (type, path, mode)")
    ign.extend(check_entry_keys(entry, site, INPUT_KEYS, INPUT_AZURE_ONLY))
    if "optional" in entry:
        as_bool(entry["optional"], site.child("optional"))
    kind = as_choice(
        entry.get("type", "uri_folder"), site.child("type"), PATH_TYPES + LITERAL_TYPES
    )
    if kind in LITERAL_TYPES:
        held = entry.get("value", entry.get("default"))
        return Port(
            name, site.child("value" if "value" in entry else "default"), "literal", value=held
        )
    return _data_port(name, kind, entry, site, parent, typed="type" in entry)


def _data_port(
    name: str, kind: str, entry: dict[str, Any], site: Site, parent: Mapping[str, Port], typed: bool
) -> Port:
    if "path" not in entry or entry["path"] is None:
        return Port(name, site, kind)
    here = site.child("path")
    text = as_str(entry["path"], here, "a path")
    bound = _bound(name, text, here, parent)
    if bound is None:
        return Port(name, here, kind, text)
    if bound.literal:
        raise here.error("is bound to a literal pipeline input; expected a data input")
    return Port(name, bound.site, kind if typed else bound.kind, bound.text)


def _output(name: str, value: Any, site: Site, parent: Mapping[str, Port], ign: list[str]) -> Port:
    if isinstance(value, str):
        bound = _bound(name, value, site, parent)
        if bound is None:
            raise site.error(f"expected a mapping (type, path, mode), got {shown(value)}")
        return bound
    entry = as_mapping(value, site, "a mapping (type, path, mode)")
    ign.extend(check_entry_keys(entry, site, OUTPUT_KEYS, OUTPUT_AZURE_ONLY))
    kind = as_choice(entry.get("type", "uri_folder"), site.child("type"), PATH_TYPES)
    return _data_port(name, kind, entry, site, parent, typed="type" in entry)


def resolve_inputs(ports: Mapping[str, Port], base: Path, roots: Roots) -> dict[str, Path | None]:
    """Absolute paths of the data inputs (None: declared without a path).

    Raises:
        JobSpecError: a cloud location, a path leaving the job folder or the allowed
            roots, or a path that does not exist.
    """
    out: dict[str, Path | None] = {}
    for name, port in ports.items():
        if port.literal:
            continue
        if port.text is None:
            out[name] = None
            continue
        out[name] = must_exist(resolve(base, port.text, roots, port.site), port.site)
    return out


def place_outputs(
    ports: Mapping[str, Port], spool: Path, roots: Roots
) -> tuple[dict[str, Path], list[str]]:
    """Where each output is written, and a note for each one moved into the spool.

    Raises:
        JobSpecError: a local path leaving the job's spool folder or the allowed roots.
    """
    places: dict[str, Path] = {}
    notes: list[str] = []
    for name, port in ports.items():
        text = local_text(port.text) if port.text is not None else None
        if text is not None and not is_remote(text):
            places[name] = resolve(
                spool, text, roots, port.site, what="job's spool folder", output=True
            )
            continue
        places[name] = _spool_place(name, port.kind, text, spool)
        said = f"its path {text!r} is not a local path" if text else "it has no path"
        notes.append(note(REDIRECTED, f"output {name}: {said}; written to {places[name]}"))
    return places, notes


def _spool_place(name: str, kind: str, text: str | None, spool: Path) -> Path:
    folder = JobLayout(spool, spool.name).outputs / name
    if kind != "uri_file":
        return folder
    last = text.rstrip("/").rpartition("/")[2] if text else ""
    return folder / last if _SAFE_FILE.match(last) and ".." not in last else folder
