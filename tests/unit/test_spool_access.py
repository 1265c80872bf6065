"""The rule: the spool is listed and its records decoded in the storage layer only.

``os.listdir``, ``os.scandir`` and ``json.loads`` (called, or imported by name) are
allowed in ``prsd/spool/`` (the spool's one owner) and ``prsd/worker/`` (the job's
own interpreter, standard library only), and ``json.loads`` also in ``prsd/wire/``:
the decoders of the records every side shares, which decode bytes handed in and open
no file. Every other module of prsd calls none of them:

- it lists a folder through prsd/spool/listing.py (``listing``, ``names``, ``scan``),
  the spool's folders and the folders listed on the same terms (a user's input
  folder on the owner's side, a code folder being copied) alike;
- it reads a spool file through the reader of the prsd/spool module that owns it;
- it decodes a JSON object that is no spool record (a socket or pipe frame, a
  command's output, a settings file it has read) with
  :func:`prsd.spool.jsonobject.decode_object`.

The second rule: no module outside the same two folders reads or writes a spool file
raw. A call of ``read_bytes``, ``read_text``, ``write_bytes``, ``write_text`` or
``open`` on a spool path, or ``open(path, ...)`` / ``os.open(path, ...)`` of one, is
found where the path is written as a layout's name (a property or method of
``SpoolLayout``, ``JobLayout`` or ``PipelineLayout`` that gives a path, or a layout's
``root``), also joined further with ``/``: ``layout.spec.read_text()``,
``open(layout.final, "rb")``, ``spool.job(i).final.read_bytes()``,
``open(layout.state / name)``. The names are taken from the classes, so a new name is
covered by itself. A path first bound to a variable is not followed: the rule catches
the spelling the code uses, the index in prsd/spool/__init__.py says which module owns
each file.
"""

from __future__ import annotations

import ast
from pathlib import Path

from prsd.spool.layout import JobLayout, SpoolLayout
from prsd.spool.pipelinelayout import PipelineLayout
from tests.unit.test_spool_index import named_paths

ROOT = Path(__file__).resolve().parents[2]
BANNED = {("os", "listdir"), ("os", "scandir"), ("json", "loads")}
ALLOWED = ("prsd/spool/", "prsd/worker/")
DECODERS = ("prsd/wire/",)  # json.loads of bytes handed in: the records' decoders


def count_banned(source: str, *, decoder: bool = False) -> int:
    """How many times ``source`` calls (or imports by name) a banned function; a
    ``decoder`` module's ``json.loads`` is not counted."""
    banned = BANNED - {("json", "loads")} if decoder else BANNED
    count = 0
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and (node.value.id, node.attr) in banned
        ):
            count += 1
        elif isinstance(node, ast.ImportFrom) and node.module in ("os", "json"):
            count += sum((node.module, a.name) in banned for a in node.names)
    return count


def test_no_module_lists_or_decodes_the_spool_outside_the_storage_layer() -> None:
    found = {}
    for path in sorted((ROOT / "prsd").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(ALLOWED):
            source = path.read_text(encoding="utf-8")
            calls = count_banned(source, decoder=rel.startswith(DECODERS))
            if calls:
                found[rel] = calls
    assert not found, (
        "os.listdir / os.scandir / json.loads outside prsd/spool and prsd/worker "
        f"(module: calls): {found}; list with prsd/spool/listing.py, read a spool file "
        "with its prsd/spool reader, decode a frame with prsd/spool/jsonobject.py"
    )


def test_the_rule_sees_each_banned_spelling() -> None:
    source = (
        "import os, json\n"
        "from os import scandir\n"
        "from json import loads as read\n"
        "os.listdir('.')\n"
        "json.loads(b'1')\n"
        "listing = os.scandir\n"
        "os.path.join('a')\n"
        "json.dumps(1)\n"
    )
    assert count_banned(source) == 5
    assert count_banned(source, decoder=True) == 3  # a decoder's json.loads is its own


# A layout's path names (taken from the classes) and its root; ``job`` and ``pipeline``
# give a layout, not a file.
LAYOUT_NAMES = (
    set().union(*(named_paths(c) for c in (SpoolLayout, JobLayout, PipelineLayout))) | {"root"}
) - {"job", "pipeline"}
RAW_METHODS = {"read_bytes", "read_text", "write_bytes", "write_text", "open"}


def _is_spool_path(node: ast.expr) -> bool:
    """``node`` is written as a layout's path: ``<x>.<name>``, ``<x>.<name>(...)``,
    either joined further with ``/``."""
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        node = node.left
    if isinstance(node, ast.Call):
        node = node.func
    return isinstance(node, ast.Attribute) and node.attr in LAYOUT_NAMES


def raw_spool_io(source: str) -> list[int]:
    """The lines of ``source`` that read or write a spool path raw (one per call)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        first = node.args[0] if node.args else None
        if (
            (isinstance(f, ast.Attribute) and f.attr in RAW_METHODS and _is_spool_path(f.value))
            or (isinstance(f, ast.Name) and f.id == "open" and first and _is_spool_path(first))
            or (
                isinstance(f, ast.Attribute)
                and f.attr == "open"
                and isinstance(f.value, ast.Name)
                and f.value.id == "os"
                and first is not None
                and _is_spool_path(first)
            )
        ):
            lines.append(node.lineno)
    return sorted(lines)


def test_no_module_reads_or_writes_a_spool_file_raw_outside_the_storage_layer() -> None:
    found = []
    for path in sorted((ROOT / "prsd").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(ALLOWED):
            found += [f"{rel}:{n}" for n in raw_spool_io(path.read_text(encoding="utf-8"))]
    assert not found, (
        f"a spool file read or written raw outside prsd/spool and prsd/worker: {found}; "
        "use the reader or writer of the prsd/spool module that owns the file (the index "
        "in prsd/spool/__init__.py names it), or add one there"
    )


def test_the_raw_rule_sees_each_spelling() -> None:
    assert {"spec", "final", "done_task", "issue_log", "nodes_view", "job_yaml"} <= LAYOUT_NAMES
    source = (
        "layout.spec.read_text(encoding='utf-8')\n"  # 1
        "spool.job(i).final.read_bytes()\n"  # 2
        "open(layout.final, 'rb')\n"  # 3
        "os.open(layout.issue_log(epoch), os.O_RDONLY)\n"  # 4
        "open(layout.state / name, 'rb')\n"  # 5
        "step.job_yaml.write_text(text)\n"  # 6
        "staged.origin.write_bytes(data)\n"  # 7
        "layout.done_task(t, n).read_bytes()\n"  # 8
        "spool.nodes_view.open('rb')\n"  # 9
        "(layout.root / 'x').read_text()\n"  # 10
        "layout.final.exists()\n"  # not a read
        "Path(name).read_text()\n"  # no layout's name
        "open(name)\n"
        "layout.spec\n"
        "spool.job(i)\n"
    )
    assert raw_spool_io(source) == list(range(1, 11))
