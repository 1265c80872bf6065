"""What each process's start loads: a heavy module that comes back on a path it does not
need fails here (each path is imported in a fresh interpreter, ``sys.modules`` read)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import prsd.worker.boot

BOOT = Path(prsd.worker.boot.__file__)
HEAVY = ("pandas", "pyarrow", "numpy", "yaml", "structlog", "watchfiles", "rich", "psutil")


def _loaded(code: str) -> set[str]:
    """The top-level modules and prsd modules loaded after ``code`` in a new interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    names = json.loads(out.stdout.splitlines()[-1])
    return {n for n in names if n.startswith("prsd.") or "." not in n}


def test_the_worker_host_loads_the_standard_library_and_prsd_worker_only() -> None:
    code = (
        f"import sys; sys.path.insert(0, {str(BOOT.parent)!r}); import boot; "
        "boot.isolate_imports(); import prsd.worker.host"
    )
    loaded = _loaded(code)
    prsd_modules = {n for n in loaded if n.startswith("prsd.")}
    outside = {n for n in prsd_modules if not n.startswith(("prsd.worker.", "prsd.wire."))}
    assert outside <= {"prsd.fdio", "prsd.wire", "prsd.worker"}, outside
    assert not loaded & {*HEAVY, "anyio"}, loaded & {*HEAVY, "anyio"}


def test_prsd_agent_start_loads_no_leader_yaml_or_tables() -> None:
    loaded = _loaded("import prsd.daemon, prsd.agent.agent, prsd.agent.nodeid, prsd.sdnotify")
    run = ("prsd.embedded", "prsd.runhere", "prsd.runcmd")  # prsd run's own modules
    assert not {n for n in loaded if n.startswith(("prsd.leader.", "prsd.submit", *run))}
    assert not loaded & {"pandas", "pyarrow", "numpy", "yaml", "structlog", "watchfiles", "rich"}


def test_prsd_leader_start_loads_no_agent_or_tables() -> None:
    loaded = _loaded(
        "import prsd.daemon, prsd.leader.leader, prsd.leader.election, prsd.sdnotify, "
        "prsd.storage.watch"
    )
    run = ("prsd.embedded", "prsd.runhere", "prsd.runcmd")  # prsd run's own modules
    assert not {n for n in loaded if n.startswith(("prsd.agent.", *run))}
    assert not loaded & {"pandas", "pyarrow", "numpy", "structlog", "watchfiles", "rich"}


def test_the_command_line_parser_loads_neither_daemon() -> None:
    loaded = _loaded("import prsd.daemon; prsd.daemon.parser()")
    assert not {n for n in loaded if n.startswith(("prsd.agent.", "prsd.leader."))}
    assert not loaded & set(HEAVY)
