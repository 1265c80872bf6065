"""A worker under a job's own interpreter: a bare venv without pandas or prsd.

``PRSD_TEST_PYTHON`` names the interpreter the venv is made from (default: the one
running the tests), so the same test proves a Python 3.7 boot where one is installed:
``PRSD_TEST_PYTHON=/root/.pyenv/versions/3.7.16/bin/python pytest -k second_interpreter``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING

from tests.integration.worker_driver import WorkerPaths, files_mb, start_worker

if TYPE_CHECKING:
    from pathlib import Path


def _bare_venv(where: Path) -> str:
    base = os.environ.get("PRSD_TEST_PYTHON") or sys.executable
    subprocess.run([base, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    return str(where / "bin" / "python")


def test_second_interpreter_runs_files_mini_batch(tmp_path: Path) -> None:
    """A bare venv (no pip, pandas or prsd) boots a worker with the standard library only."""
    python = _bare_venv(tmp_path / "venv")
    alone = subprocess.run(
        [python, "-c", "import prsd"], check=False, capture_output=True, timeout=60, cwd=tmp_path
    )
    assert alone.returncode != 0, "the bare venv must not see prsd by itself"
    paths = WorkerPaths.under(tmp_path / "job")
    paths.write_script("""
        import importlib.util, json, sys
        from azureml_user.parallel_run import EntryScript

        def visible(name):
            return importlib.util.find_spec(name) is not None

        def run(mini_batch):
            return [json.dumps({
                "prefix": sys.prefix,
                "visible": {n: visible(n) for n in ("pandas", "pytest", "tests", "protocol")},
                "pandas_loaded": "pandas" in sys.modules,
                "agent_name": EntryScript().agent_name,
                "n": len(mini_batch),
            })]
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    with start_worker(paths, python=python, env=env) as worker:
        worker.send(paths.hello().to_message())
        worker.expect("ready")
        outcome = worker.run(files_mb(0, ["/x/1.wav", "/x/2.wav"]))
        assert worker.shutdown() == 0
    assert outcome["status"] == "succeeded", outcome
    facts = json.loads(paths.out.read_text())
    assert os.path.realpath(facts["prefix"]) == os.path.realpath(tmp_path / "venv")
    assert facts["visible"] == {"pandas": False, "pytest": False, "tests": False, "protocol": False}
    assert facts["pandas_loaded"] is False
    assert (facts["agent_name"], facts["n"]) == ("process000", 2)
