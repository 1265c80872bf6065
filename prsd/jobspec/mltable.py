"""Reading an Azure ``MLTable`` folder: which files it names and how to read them.

Guarantees: the MLTable file is read with the same hostile-input rules as job.yaml; its
``paths`` entries (``file``, ``folder``, ``pattern``) resolve relative to the MLTable
folder and may not leave it (a ``pattern`` is a glob where ``**`` crosses folders); the
``read_delimited`` / ``read_parquet`` / ``read_json_lines`` transformation sets the
format and options. The other transformations become steps
(:mod:`prsd.jobspec.mlsteps`) applied as Azure applies them; one prsd cannot apply is
an error naming it and the file, never skipped; so is ``read_delta_lake``. No data
file is opened. Quoted line breaks in CSV fields are always honoured when splitting,
so ``support_multi_line`` is accepted either way.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prsd.errors import JobSpecError
from prsd.jobspec.mlsteps import read_step
from prsd.jobspec.paths import Roots, is_remote, local_text, resolve, stays_inside
from prsd.jobspec.said import NOT_USED, note
from prsd.jobspec.values import as_bool, as_choice, as_mapping, as_str, shown, suggest
from prsd.jobspec.yamlsafe import Doc, Site, read_yaml

MLTABLE_FILE = "MLTable"
HEADERS = ("all_files_same_headers", "from_first_file", "all_files_different_headers", "no_header")
ENCODINGS = {
    "utf8": "utf-8",
    "iso88591": "iso-8859-1",
    "latin1": "latin-1",
    "ascii": "ascii",
    "utf16": "utf-16",
    "utf32": "utf-32",
    "utf8bom": "utf-8-sig",
    "windows1252": "cp1252",
}
_READERS = {"read_delimited": "csv", "read_parquet": "parquet", "read_json_lines": "jsonl"}
_READER_KEYS = {
    "read_delimited": {
        "delimiter",
        "header",
        "encoding",
        "include_path_column",
        "empty_as_string",
        "support_multi_line",
        "infer_column_types",
        "path_column",
    },
    "read_parquet": {"include_path_column", "path_column"},
    "read_json_lines": {"include_path_column", "encoding", "invalid_lines", "path_column"},
}
_USED_KEYS = {"paths", "transformations", "type", "$schema"}


@dataclass(frozen=True)
class Table:
    """What an MLTable says about its data.

    Attributes:
        paths: absolute paths of the files and folders it names, in order.
        format: ``files`` (no read transformation), ``csv``, ``parquet`` or ``jsonl``.
        options: InputSpec keyword arguments (delimiter, header, encoding,
            include_path_column, path_column, empty_as_string) taken from the read
            transformation, and ``steps``: the transformations after it.
        notes: things prsd does not honour, to tell the user once.
    """

    paths: tuple[str, ...]
    format: str
    options: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def mltable_folder(path: Path) -> Path | None:
    """The MLTable folder ``path`` names (the folder, or its ``MLTable`` file), else None."""
    if path.name == MLTABLE_FILE and path.is_file():
        return path.parent
    if path.is_dir() and (path / MLTABLE_FILE).is_file():
        return path
    return None


def read_mltable(folder: Path, roots: Roots) -> Table:
    """Read ``folder/MLTable``.

    Raises:
        JobSpecError: (located in the MLTable file) a malformed file, a path that is
            remote, missing or leaves the folder, a pattern matching nothing, or a read
            transformation prsd cannot honour.
    """
    path = folder / MLTABLE_FILE
    if not stays_inside(path, folder):
        raise JobSpecError("", str(path), "is a symlink leading outside the MLTable folder")
    doc = read_yaml(path, what="MLTable file")
    top = doc.site("")
    data = as_mapping(doc.data, top, "an MLTable mapping (paths, transformations)")
    if not data:
        raise top.error("the MLTable file is empty; expected paths and transformations")
    notes = [note(NOT_USED, f"{doc.path}: {k}") for k in data if k not in _USED_KEYS]
    if data.get("type", "mltable") != "mltable":
        raise doc.site("type").error(f"expected mltable, got {shown(data['type'])}")
    if "paths" not in data:
        raise top.error("paths: required (the files, folders or patterns of the table)")
    paths = _paths(data["paths"], doc.site("paths"), folder, roots)
    fmt, options, more = _transformations(data.get("transformations"), doc)
    return Table(tuple(str(p) for p in paths), fmt, options, tuple(notes + more))


def _paths(value: Any, site: Site, folder: Path, roots: Roots) -> list[Path]:
    if not isinstance(value, list) or not value:
        raise site.error(
            f"expected a list of file:, folder: or pattern: entries, got {shown(value)}"
        )
    out: list[Path] = []
    for i, entry in enumerate(value):
        out.extend(_path_entry(entry, site.item(i), folder, roots))
    return out


def _path_entry(entry: Any, site: Site, folder: Path, roots: Roots) -> list[Path]:
    kinds = ("file", "folder", "pattern")
    mapping = as_mapping(entry, site, "one of file:, folder:, pattern:")
    given = [k for k in mapping if k in kinds]
    if len(given) != 1 or len(mapping) != 1:
        extra = [k for k in mapping if k not in kinds]
        hint = suggest(extra[0], kinds) if extra else ""
        raise site.error(f"expected exactly one of file:, folder:, pattern:{hint}")
    kind = given[0]
    here = site.child(kind)
    text = as_str(mapping[kind], here, "a path")
    if kind == "pattern":
        return _pattern(text, here, folder, roots)
    path = resolve(folder, text, roots, here, what="MLTable folder")
    ok = path.is_file() if kind == "file" else path.is_dir()
    if not ok:
        raise here.error(f"{kind} {path} does not exist")
    return [path]


def _pattern(text: str, site: Site, folder: Path, roots: Roots) -> list[Path]:
    text = local_text(text)
    if is_remote(text):
        raise site.error(f"{text!r} is a cloud location; prsd reads local paths only")
    if ".." in Path(text).parts:
        raise site.error(f"{text!r}: '..' is not accepted in a pattern")
    if Path(text).is_absolute():
        matches = glob.glob(text, recursive=True)
    else:
        matches = glob.glob(text, root_dir=folder, recursive=True)
    found = [resolve(folder, m, roots, site, what="MLTable folder") for m in sorted(matches)]
    files = [p for p in found if p.is_file() and p != folder / MLTABLE_FILE]
    if not files:
        raise site.error(f"pattern {text!r} matches no file under {folder}")
    return files


def _transformations(value: Any, doc: Doc) -> tuple[str, dict[str, Any], list[str]]:
    site = doc.site("transformations")
    if value is None:
        return "files", {}, []
    if not isinstance(value, list):
        raise site.error(f"expected a list of transformations, got {shown(value)}")
    fmt, options, steps = "files", {}, []
    for i, step in enumerate(value):
        name, args = _step(step, site.item(i))
        if name == "read_delta_lake":
            raise site.item(i).error("Delta Lake tables are not supported by prsd")
        if name in _READERS:
            if fmt != "files":
                raise site.item(i).error(f"a second reader ({name}) in {doc.path}; keep one")
            fmt, options = _READERS[name], _reader_options(name, args, site.item(i).child(name))
        else:
            steps.append(read_step(name, args, site.item(i), str(doc.path)))
    if steps and fmt == "files":
        raise site.error(
            f"{doc.path} transforms a table but reads none: add read_delimited, "
            "read_parquet or read_json_lines"
        )
    if steps:
        options["steps"] = tuple(steps)
    return fmt, options, []


def _step(step: Any, site: Site) -> tuple[str, Any]:
    if isinstance(step, str):
        return step, None
    if isinstance(step, dict) and len(step) == 1:
        name = next(iter(step))
        return name, step[name]
    raise site.error(f"expected one transformation (read_delimited: ...), got {shown(step)}")


def _reader_options(name: str, args: Any, site: Site) -> dict[str, Any]:
    mapping = as_mapping(args, site)
    for key in mapping:
        if key not in _READER_KEYS[name]:
            raise site.child(key).error(
                f"unknown option of {name}{suggest(key, _READER_KEYS[name])}"
            )
    options: dict[str, Any] = {}
    if "include_path_column" in mapping:
        here = site.child("include_path_column")
        options["include_path_column"] = as_bool(mapping["include_path_column"], here)
    if "path_column" in mapping:
        options["path_column"] = as_str(mapping["path_column"], site.child("path_column"), "a name")
    if "infer_column_types" in mapping:  # checked; types are inferred as pandas does
        as_bool(mapping["infer_column_types"], site.child("infer_column_types"))
    if "invalid_lines" in mapping and mapping["invalid_lines"] != "error":
        raise site.child("invalid_lines").error("prsd fails on an invalid line (error)")
    if "encoding" in mapping:
        code = as_choice(mapping["encoding"], site.child("encoding"), ENCODINGS)
        options["encoding"] = ENCODINGS[code]
    if name == "read_delimited":
        options.update(_delimited(mapping, site))
    return options


def _delimited(mapping: dict[str, Any], site: Site) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if "delimiter" in mapping:
        delimiter = mapping["delimiter"]
        if not isinstance(delimiter, str) or len(delimiter) != 1:
            raise site.child("delimiter").error(f"expected one character, got {shown(delimiter)}")
        options["delimiter"] = delimiter
    if "header" in mapping:
        options["header"] = as_choice(mapping["header"], site.child("header"), HEADERS)
    if "empty_as_string" in mapping:
        here = site.child("empty_as_string")
        options["empty_as_string"] = as_bool(mapping["empty_as_string"], here)
    if "support_multi_line" in mapping:  # checked; prsd always honours quoted line breaks
        as_bool(mapping["support_multi_line"], site.child("support_multi_line"))
    return options
