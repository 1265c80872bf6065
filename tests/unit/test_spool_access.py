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
"""

from __future__ import annotations

import ast
from pathlib import Path

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
