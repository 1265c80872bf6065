"""What each process's start loads: a heavy module that comes back on a path it does not
need fails here (each path is imported in a fresh interpreter, ``sys.modules`` read)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import prsd.worker.boot
from prsd.agent.nvml import nvml_can_answer
from tests.fleet import Fleet, serving
from tests.helpers import wait_until
from tests.jobkit import make_job

if TYPE_CHECKING:
    from collections.abc import Iterator

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
        "prsd.spool.watch"
    )
    run = ("prsd.embedded", "prsd.runhere", "prsd.runcmd")  # prsd run's own modules
    assert not {n for n in loaded if n.startswith(("prsd.agent.", *run))}
    assert not loaded & {"pandas", "pyarrow", "numpy", "structlog", "watchfiles", "rich"}


def test_the_command_line_parser_loads_neither_daemon() -> None:
    loaded = _loaded("import prsd.daemon; prsd.daemon.parser()")
    assert not {n for n in loaded if n.startswith(("prsd.agent.", "prsd.leader."))}
    assert not loaded & set(HEAVY)


# Code a job needs only once it ends (its result, partial output, error text) or only for a
# retry (the kept results, the units over the split): `prsd run`'s leader loads it then.
NOT_BEFORE_THE_END = (
    "prsd.leader.end.finish",
    "prsd.leader.end.partial",
    "prsd.leader.end.errortext",
    "prsd.retryplan.kept",
    "prsd.retryplan.plan",
    "prsd.retryplan.units",
)


def test_prsd_run_s_leader_and_agent_load_no_end_of_job_or_retry_code() -> None:
    loaded = _loaded("import prsd.daemon, prsd.embedded, prsd.agent.agent, prsd.agent.forks")
    assert "prsd.leader.leader" in loaded and "prsd.leader.run.job" in loaded
    assert not {n for n in loaded if n.startswith(NOT_BEFORE_THE_END)}, sorted(
        n for n in loaded if n.startswith(NOT_BEFORE_THE_END)
    )


def test_the_leader_daemon_loads_no_end_of_job_or_retry_code_at_its_start() -> None:
    loaded = _loaded("import prsd.daemon, prsd.leader.leader, prsd.leader.requests.desk")
    assert not {n for n in loaded if n.startswith(NOT_BEFORE_THE_END)}


FILE_LIST_JOB = """
    type: parallel
    name: imports
    input_data: ./data
    mini_batch_size: "2"
    resources: {max_concurrency_per_instance: 2}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""
ECHO = """
    import os
    def run(mini_batch):
        return [os.path.basename(p) for p in mini_batch]
"""
# Only a pipeline, a table, or a retry needs these; a file-list job's run must not load them.
NOT_FOR_A_FILE_LIST_JOB = (
    "prsd.pipelinerun",
    "prsd.cli.pipelines",
    "prsd.pipesubmit",
    "prsd.jobspec.steps",  # a pipeline's steps: asking "is it a pipeline" needs none of it
    "prsd.jobspec.component",
    "prsd.inputsplit.tabular.",
    "prsd.leader.rerun.combine",
    "prsd.doctor",  # the daemons' spool checks and `prsd doctor`: not prsd run's
    "prsd.envs.node",  # building an environment: the job names none
    "prsd.envs.build",
)


def test_prsd_run_of_a_file_list_job_loads_no_pipeline_table_or_retry_code(
    tmp_path: Path,
) -> None:
    job = make_job(tmp_path, ECHO, FILE_LIST_JOB, files=6)
    seen = tmp_path / "modules.json"
    argv = ["prsd", "run", str(job), "--spool", str(tmp_path / "spool"), "--quiet"]
    proc = subprocess.run(
        [sys.executable, "-c", _modules_of_prsd_run(argv, seen)],
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outputs = list((tmp_path / "spool" / "jobs").glob("*/outputs/out.txt"))
    assert len(outputs) == 1 and len(outputs[0].read_text().splitlines()) == 6
    loaded = set(json.loads(seen.read_text()))
    assert "prsd.leader.leader" in loaded and "prsd.agent.agent" in loaded  # it ran the job here
    cut = {n for n in loaded if n.startswith(NOT_FOR_A_FILE_LIST_JOB)}
    assert not cut, cut
    assert not loaded & {"pandas", "pyarrow", "numpy", "rich", "structlog", "watchfiles"}
    # NVML (pynvml, ctypes) only where a driver device exists: on a GPU machine it is asked.
    assert ("pynvml" in loaded) == nvml_can_answer(), "pynvml" in loaded


def _modules_of_prsd_run(argv: list[str], seen: Path) -> str:
    """Python code that runs ``prsd`` with ``argv`` and writes its modules to ``seen``."""
    return (  # the modules are read when the run has ended, before leave() exits at once
        f"import json, sys\nfrom prsd.daemon import leave, main\nsys.argv = {argv!r}\n"
        f"rc = main()\nopen({str(seen)!r}, 'w').write(json.dumps(sorted(sys.modules)))\n"
        "leave(rc)"
    )


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    """A leader and an agent daemon serving ``tmp_path / "spool"``."""
    with serving(tmp_path) as f:
        yield f


def test_prsd_run_handing_its_job_to_the_daemons_loads_no_leader_or_agent(
    tmp_path: Path, fleet: Fleet
) -> None:
    job = make_job(tmp_path, ECHO, FILE_LIST_JOB, files=4)
    seen = tmp_path / "modules.json"
    argv = ["prsd", "run", str(job), "--spool", str(fleet.spool), "--quiet"]
    proc = subprocess.run(
        [sys.executable, "-c", _modules_of_prsd_run(argv, seen)],
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
        env={**os.environ, "PRSD_UNSAFE_SPOOL": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "a leader and agents serve the spool" in proc.stdout  # handed, not run here
    outputs = list((fleet.spool / "jobs").glob("*/outputs/out.txt"))
    assert len(outputs) == 1 and len(outputs[0].read_text().splitlines()) == 4
    loaded = set(json.loads(seen.read_text()))
    assert "prsd.follow" in loaded
    here = ("prsd.leader", "prsd.agent", "prsd.runhere", "prsd.embedded", "prsd.worker.")
    assert not {n for n in loaded if n.startswith(here)}, sorted(loaded)
    assert "pynvml" not in loaded


def test_the_agent_daemon_imports_nothing_for_its_first_job_s_log_line(tmp_path: Path) -> None:
    """Its first log line comes with its first job: structlog is set up at its start."""
    f = Fleet(tmp_path / "spool", tmp_path / "logs", env={"PYTHONPROFILEIMPORTTIME": "1"})
    try:
        f.leader()
        f.agent("a1")
        wait_until(lambda: f.leader_epoch() == 1, 60, "the leader daemon to lead")
        wait_until((f.spool / "nodes" / "a1.json").exists, 60, "the agent's heartbeat")
        log = tmp_path / "logs" / "a1.1.log"
        started = log.stat().st_size
        job_id = f.submit(make_job(tmp_path, ECHO, FILE_LIST_JOB, files=2))
        wait_until(lambda: f.final(job_id) is not None, 120, "the job's end")
    finally:
        f.close()
    during = log.read_text(encoding="utf-8")[started:]
    assert "serving job" in during  # its first log line, written during the job
    assert "structlog" not in during, during
