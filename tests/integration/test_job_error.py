"""``logs/job_error.txt`` is true for every way a job ends, read as a user reads it.

Each test runs ``prsd run`` (or ``prsd run`` plus ``prsctl cancel``) on a real job
folder and reads ``job_error.txt`` and ``user/error.txt``: the cause first, then the
first error and the file with its full text, then the errors counted; ``No errors.``
only for a job that had none.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.helpers import stop_daemons, wait_until
from tests.jobkit import PRSD, RunResult, make_job, run_prsd

YAML = """
    input_data: {data}
    mini_batch_size: "{mbs}"
    resources: {{max_concurrency_per_instance: {workers}}}
    retry_settings: {{max_retries: 0, timeout: {timeout}}}
    {extra}
    task:
      code: ./code
      entry_script: score.py
"""


def _yaml(
    *,
    workers: int = 1,
    data: str = "./data",
    mbs: str = "1",
    timeout: float = 60,
    extra: str = "",
    args: str = "",
) -> str:
    text = YAML.format(workers=workers, data=data, mbs=mbs, timeout=timeout, extra=extra)
    return text + (f'      program_arguments: "{args}"\n' if args else "")


def _said(r: RunResult) -> list[str]:
    text = (r.logs / "job_error.txt").read_text(encoding="utf-8")
    assert (r.logs / "user" / "error.txt").read_text(encoding="utf-8") == text
    return text.splitlines()


def _full_text(lines: list[str]) -> str:
    found = [ln.removeprefix("Full text: ") for ln in lines if ln.startswith("Full text: ")]
    assert len(found) == 1, lines
    assert os.path.isfile(found[0]), found
    return found[0]


def test_completed_job_says_no_errors(tmp_path: Path) -> None:
    """A job with no error at all: exactly ``No errors.``."""
    script = "def run(mini_batch):\n    return mini_batch\n"
    r = run_prsd(make_job(tmp_path, script, _yaml(), files=3), tmp_path / "spool")
    assert r.returncode == 0, r.stderr
    assert _said(r) == ["No errors."]


def test_init_failure_names_the_error_and_its_traceback_file(tmp_path: Path) -> None:
    """init() raising: the rule that failed the job, the first init error, its file, counted."""
    script = """
    def init():
        raise FileNotFoundError("model.pkl is missing")
    def run(mini_batch):
        return mini_batch
    """
    r = run_prsd(
        make_job(tmp_path, script, _yaml(), files=2), tmp_path / "spool", "--node-id", "n1"
    )
    assert r.returncode == 42, r.stderr
    lines = _said(r)
    assert lines[0].startswith("init() failed 3 times and every node stopped"), lines
    assert lines[1] == (
        "First error: init failed (node n1, process000): FileNotFoundError: model.pkl is missing"
    ), lines
    assert 'raise FileNotFoundError("model.pkl is missing")' in "\n".join(lines)
    assert _full_text(lines) == str(r.logs / "user" / "error" / "n1" / "process000.txt")
    assert "3 x [init] FileNotFoundError: model.pkl is missing (first: process000 on node n1" in (
        "\n".join(lines)
    )
    assert "No errors." not in lines


def test_threshold_counts_the_errors_after_the_cause(tmp_path: Path) -> None:
    """mini_batch_error_threshold exceeded: the threshold, the first error, the groups."""
    script = """
    def run(mini_batch):
        if mini_batch[0].endswith("item00001.txt"):
            raise KeyError("label")
        raise RuntimeError("model not loaded")
    """
    job = make_job(tmp_path, script, _yaml(extra="mini_batch_error_threshold: 2"), files=5)
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 42, r.stderr
    lines = _said(r)
    assert "mini_batch_error_threshold=2" in lines[0], lines
    assert lines[1].startswith("First error: mini-batch "), lines
    assert lines[1].endswith(("RuntimeError: model not loaded", "KeyError: 'label'")), lines
    assert _full_text(lines).endswith("process000.txt")
    # The job ends at the third failure; mini-batches already running may still be
    # booked (how many depends on the machine's pace), so the groups are checked
    # against the total the job says, most frequent first.
    counted = [ln for ln in lines if " x [failed] " in ln]
    groups = [int(ln.split(" x ", 1)[0]) for ln in counted]
    total = re.search(
        r"Errors \((\d) distinct, (\d) in all\), most frequent first:", "\n".join(lines)
    )
    assert total is not None, lines
    assert int(total[1]) == len(counted) and int(total[2]) == sum(groups) >= 3, lines
    assert groups == sorted(groups, reverse=True), lines
    assert counted[0].startswith(f"{groups[0]} x [failed] RuntimeError: model not loaded (first: ")
    assert all(
        ln.startswith("1 x [failed] KeyError: 'label' (first: mini-batch 000000001")
        for ln in counted[1:]
    ), lines


def test_run_timeout_is_counted_as_timeouts(tmp_path: Path) -> None:
    """run() past retry_settings.timeout: a [timeout] error naming the limit."""
    script = """
    import time
    def run(mini_batch):
        time.sleep(60)
    """
    job = make_job(
        tmp_path, script, _yaml(timeout=1, extra="mini_batch_error_threshold: 0"), files=1
    )
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 42, r.stderr
    lines = _said(r)
    assert "mini_batch_error_threshold=0" in lines[0], lines
    assert "run() did not return within 1 s (retry_settings.timeout)" in lines[1], lines
    assert "in run" in Path(_full_text(lines)).read_text(encoding="utf-8")
    assert any(ln.startswith("1 x [timeout] run() did not return within 1 s") for ln in lines)


def test_task_overhead_timeout_is_counted(tmp_path: Path) -> None:
    """--task_overhead_timeout: loading the mini-batch took too long, said as a [timeout]."""
    script = "def run(mini_batch):\n    return mini_batch\n"
    job = make_job(
        tmp_path,
        script,
        _yaml(
            data="./table.csv",
            mbs="1MB",
            extra="mini_batch_error_threshold: 0",
            args="--task_overhead_timeout 0.001",
        ),
    )
    rows = "".join(f"{i},{i * 7}\n" for i in range(2000))
    (job / "table.csv").write_text("a,b\n" + rows, encoding="utf-8")
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 42, r.stderr
    lines = _said(r)
    assert "loading the mini-batch took longer than 0.001 s (task_overhead_timeout)" in lines[1]
    _full_text(lines)
    assert any(ln.startswith("1 x [timeout] loading the mini-batch") for ln in lines), lines


def test_progress_timeout_names_the_leaders_log(tmp_path: Path) -> None:
    """No progress for progress_update_timeout: the cause, and where the leader logged it."""
    script = "import time\ndef run(mini_batch):\n    time.sleep(30)\n"
    job = make_job(tmp_path, script, _yaml(args="--progress_update_timeout 1.5"), files=1)
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 42, r.stderr
    lines = _said(r)
    assert lines[0].startswith("No progress update in 1.5 seconds (progress_update_timeout)")
    assert _full_text(lines) == str(r.logs / "sys" / "master_role.txt")
    assert lines[0] in Path(_full_text(lines)).read_text(encoding="utf-8")


def test_environment_build_failure_names_the_build_log(tmp_path: Path) -> None:
    """An environment that cannot be built: the builder's line first, its log named."""
    script = "def run(mini_batch):\n    return mini_batch\n"
    yaml = _yaml() + "      environment: {conda_file: ./conda.yml}\n"
    job = make_job(tmp_path, script, yaml, files=1)
    (job / "conda.yml").write_text(
        "dependencies:\n  - pip:\n    - prsd-no-such-package-q7x==1.0\n", encoding="utf-8"
    )
    (tmp_path / "index").mkdir()  # no package anywhere, and no network asked
    offline = {"PIP_INDEX_URL": f"file://{tmp_path / 'index'}", "PIP_FIND_LINKS": str(tmp_path)}
    cache = {"PRSD_ENV_CACHE": str(tmp_path / "envcache"), "PRSD_CONDA": "none"}
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1", env={**offline, **cache})
    assert r.returncode == 42, r.stderr
    lines = _said(r)
    no_solution = "error: No solution found when resolving dependencies: Because prsd-no-such"
    assert lines[0].startswith(no_solution), lines
    assert lines[1].startswith(
        f"First error: building the job's environment on node n1: {no_solution}"
    ), lines
    assert _full_text(lines) == str(r.logs / "sys" / "environment" / "n1.txt")
    assert any(ln.startswith(f"1 x [environment] {no_solution}") for ln in lines), lines


def test_input_error_while_splitting_names_the_file(tmp_path: Path) -> None:
    """A file that is not Parquet, found while splitting: the file and the reader's words."""
    script = "def run(mini_batch):\n    return []\n"
    job = make_job(tmp_path, script, _yaml(data="./data", mbs="1MB", extra="input_format: parquet"))
    (job / "data").mkdir()
    (job / "data" / "bad.parquet").write_bytes(b"not parquet at all" * 100)
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 42, r.stderr
    lines = _said(r)
    assert lines[0].startswith(f"cannot read the Parquet file {job / 'data' / 'bad.parquet'}: ")
    assert "magic bytes" in lines[0], lines
    assert _full_text(lines) == str(r.logs / "sys" / "master_role.txt")


def _start_run(job: Path, spool: Path) -> tuple[subprocess.Popen[bytes], str]:
    proc = subprocess.Popen(
        [*PRSD, "run", str(job), "--spool", str(spool), "--node-id", "n1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline().decode()
    assert first.startswith("job "), first
    return proc, first.split()[1]


SLOW = """
    import os, time
    def run(mini_batch):
        if "item00001" in mini_batch[0]:
            raise ValueError("bad item")
        open(os.path.join(os.path.dirname(mini_batch[0]), "..", "started"), "w").close()
        time.sleep(60)
"""


def test_cancel_says_canceled_with_the_errors_so_far(tmp_path: Path) -> None:
    """prsctl cancel: the cancellation is the cause; errors before it are still counted."""
    job = make_job(tmp_path, SLOW, _yaml(workers=2), files=3)
    spool = tmp_path / "spool"
    proc, job_id = _start_run(job, spool)
    try:
        logs = spool / "jobs" / job_id / "logs"
        report = logs / "sys" / "job_report" / "processed_mini-batches.csv"
        wait_until(lambda: (job / "started").exists(), 60, "a mini-batch to run")
        wait_until(lambda: report.exists() and "bad item" in report.read_text(), 60, "an error")
        cancel = subprocess.run(
            [sys.executable, "-m", "prsd.cli.prsctl", "cancel", job_id, "--spool", str(spool)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert cancel.returncode == 0, cancel.stderr
        proc.wait(timeout=60)
    finally:
        stop_daemons([proc])
        assert proc.stdout is not None
        proc.stdout.close()
    r = RunResult(proc.returncode or 0, "", "", spool, job_id)
    lines = _said(r)
    assert lines[0].startswith("Canceled by "), lines
    assert "ValueError: bad item" in lines[1], lines
    _full_text(lines)
    assert any(ln.startswith("1 x [failed] ValueError: bad item") for ln in lines), lines


def test_leader_side_fault_keeps_its_traceback(tmp_path: Path) -> None:
    """A fault of the leader (the job's state/ renamed away): the reason, and the traceback file."""
    job = make_job(tmp_path, SLOW.replace("item00001", "no-such-item"), _yaml(), files=3)
    spool = tmp_path / "spool"
    proc, job_id = _start_run(job, spool)
    try:
        wait_until(lambda: (job / "started").exists(), 60, "a mini-batch to run")
        root = spool / "jobs" / job_id
        os.rename(root / "state", root / "state.gone")  # noqa: TID251 - the fault under test
        proc.wait(timeout=90)
    finally:
        stop_daemons([proc])
        assert proc.stdout is not None
        proc.stdout.close()
    r = RunResult(proc.returncode or 0, "", "", spool, job_id)
    lines = _said(r)
    assert f"jobs/{job_id}/state/ is missing" in lines[0], lines
    fault = _full_text(lines)
    assert fault == str(r.logs / "sys" / "error" / "leader.txt")
    assert "Traceback" in Path(fault).read_text(encoding="utf-8")
