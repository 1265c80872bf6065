"""Notebook fixtures run as scripts in a workspace folder, against a spool (real processes)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.helpers import stop_daemons

if TYPE_CHECKING:
    from collections.abc import Iterator

NOTEBOOKS = Path(__file__).resolve().parent / "notebooks"
PRSD = [sys.executable, "-m", "prsd.daemon"]
# The notebook's four audio files, each its own size so every ratio and total can be checked.
SOUNDS = {"disco": 3000, "orchestra": 2000, "piano": 1500, "spirituality": 1000}


@dataclass
class Cells:
    """What running a notebook's cells printed."""

    returncode: int
    stdout: str
    stderr: str


def workspace(root: Path, spool: Path, **prsd: Any) -> Path:
    """A folder with config.json naming ``spool`` (and ``prsd`` settings), Code/ and test_files/."""
    root.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "subscription_id": "0000",
        "resource_group": "rg",
        "workspace_name": "ws",
    }
    config["prsd"] = {"spool": str(spool), **prsd}
    (root / "config.json").write_text(json.dumps(config))
    shutil.copytree(NOTEBOOKS / "Code", root / "Code")
    for name, size in SOUNDS.items():
        (root / "test_files" / name).mkdir(parents=True)
        (root / "test_files" / name / f"{name}.wav").write_bytes(
            bytes(range(256)) * (size // 256) + b"x" * (size % 256)
        )
    return root


def run_cells(
    notebook: str, cwd: Path, timeout_s: float = 240, extra_env: dict[str, str] | None = None
) -> Cells:
    """Run the notebook's cells in order as one script from ``cwd`` (``extra_env`` added to
    its environment: what a local run's node reads)."""
    env = {k: v for k, v in os.environ.items() if k != "PRSD_SPOOL"}
    env.update(extra_env or {})
    env["TMPDIR"] = str(cwd / "tmp")  # the notebooks' tempfile.mkdtemp() stays in the test's folder
    (cwd / "tmp").mkdir(exist_ok=True)
    proc = subprocess.run(
        [sys.executable, str(NOTEBOOKS / notebook)],
        cwd=cwd, capture_output=True, text=True, timeout=timeout_s, env=env, check=False,
    )  # fmt: skip
    return Cells(proc.returncode, proc.stdout, proc.stderr)


@contextlib.contextmanager
def daemons(spool: Path, node: str = "nb-node") -> Iterator[None]:
    """A leader and an agent serving ``spool``, stopped at the end."""
    spool.mkdir(parents=True, exist_ok=True)
    procs = [
        subprocess.Popen([*PRSD, "leader", "--spool", str(spool)], stderr=subprocess.DEVNULL),
        subprocess.Popen([*PRSD, "agent", "--spool", str(spool), "--node-id", node], stderr=subprocess.DEVNULL),
    ]  # fmt: skip
    try:
        yield
    finally:
        stop_daemons(procs)
