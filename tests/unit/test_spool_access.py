"""A ratchet: the spool is listed and its records decoded in the storage layer only.

``os.listdir``, ``os.scandir`` and ``json.loads`` (called, or imported by name) are
allowed in ``prsd/spool/`` (the spool's one owner) and ``prsd/worker/`` (the job's
own interpreter, standard library only); ``json.loads`` also in ``prsd/wire/``, the
decoders of the records every side shares, which decode bytes and open no spool file
(reading a file is the storage layer's: ``status.private.json``'s merge lives there). :data:`OFFENDERS` lists every other module
that still calls them today, with how many times: a module not listed may not start,
a listed one may not call them more often, and one that calls them less must lower
its count here (the list only shrinks; a module brought to zero leaves it). A
``json.loads`` of bytes that are not a spool file (a socket frame, a command's output)
counts too: such a decoder belongs with the records, in ``prsd/wire`` or
``prsd/spool``.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BANNED = {("os", "listdir"), ("os", "scandir"), ("json", "loads")}
ALLOWED = ("prsd/spool/", "prsd/worker/")
DECODERS = ("prsd/wire/",)  # json.loads of bytes handed in: the records' decoders

OFFENDERS: dict[str, int] = {
    "prsd/agent/forks.py": 1,
    "prsd/asowner/channel.py": 1,
    "prsd/asowner/removal.py": 1,
    "prsd/azure/config.py": 1,
    "prsd/azure/watch.py": 1,
    "prsd/doctor/race.py": 3,
    "prsd/doctor/racer.py": 1,
    "prsd/envs/interp.py": 1,
    "prsd/jobspec/code.py": 1,
    "prsd/jobspec/model.py": 1,
    "prsd/leader/intake/intake.py": 1,
    "prsd/retryplan/kept.py": 1,
    "prsd/leader/plan/planhelper.py": 2,
    "prsd/leader/requests/removal.py": 3,
    "prsd/leader/rerun/retryjob.py": 1,
    "prsd/leader/takeover/resume.py": 1,
    "prsd/inputsplit/split.py": 1,
    "prsd/inputsplit/tabular/groups.py": 2,
    "prsd/pipeline/stdlog.py": 1,
    "prsd/submit.py": 2,
}


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


def _calls() -> Counter[str]:
    found: Counter[str] = Counter()
    for path in sorted((ROOT / "prsd").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(ALLOWED):
            source = path.read_text(encoding="utf-8")
            found[rel] = count_banned(source, decoder=rel.startswith(DECODERS))
    return +found


def test_no_module_lists_or_decodes_the_spool_more_than_its_allowance() -> None:
    more = {m: (n, OFFENDERS.get(m, 0)) for m, n in _calls().items() if n > OFFENDERS.get(m, 0)}
    assert not more, (
        "os.listdir / os.scandir / json.loads outside prsd/spool and prsd/worker "
        f"(module: (found, allowed)): {more}; use a reader of the storage layer"
    )


def test_the_allowance_shrinks_with_the_code() -> None:
    calls = _calls()
    stale = {m: (calls.get(m, 0), n) for m, n in OFFENDERS.items() if calls.get(m, 0) < n}
    assert not stale, f"lower these counts in OFFENDERS (module: (found, listed)): {stale}"


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
