"""``prsd run`` end to end: real job folders, real worker processes, real files."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

ECHO = """
    import os
    def run(mini_batch):
        return [f"{os.path.basename(p)}: {open(p).read().strip()}" for p in mini_batch]
"""

FILES_YAML = """
    type: parallel
    name: e2e
    input_data: ./data
    mini_batch_size: "{mbs}"
    resources: {{max_concurrency_per_instance: {workers}}}
    retry_settings: {{max_retries: {retries}, timeout: {timeout}}}
    {extra}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""


def _yaml(
    mbs: int = 3, workers: int = 2, retries: int = 2, timeout: int = 60, extra: str = ""
) -> str:
    return FILES_YAML.format(
        mbs=mbs, workers=workers, retries=retries, timeout=timeout, extra=extra
    )


def _expected(n: int, skip: set[int] | None = None) -> list[str]:
    return [f"item{i:05d}.txt: {i}" for i in range(n) if i not in (skip or set())]


def test_output_in_input_order_exactly_once(tmp_path: Path) -> None:
    """Three workers, 200 files in mini-batches of 3: one line per file, in input order."""
    job = make_job(tmp_path, ECHO, _yaml(mbs=3, workers=3), files=200)
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stderr + r.stdout
    out = r.job / "outputs" / "out.txt"
    assert out.read_text().splitlines() == _expected(200)
    assert f"output {out}" in r.stdout
    rows = r.report()
    assert sorted(int(row["mini_batch_id"]) for row in rows) == list(range(67))
    assert {row["status"] for row in rows} == {"succeeded"}
    assert {row["process_name"] for row in rows} <= {"process000", "process001", "process002"}
    assert r.result_text().startswith("Completed")
    assert list(out.parent.iterdir()) == [out], "no temp file may remain beside the output"


def test_exception_in_run_is_retried_then_counted(tmp_path: Path) -> None:
    """run() raising on one file: 1 + max_retries attempts, then that mini-batch fails alone."""
    script = (
        ECHO
        + """
    def _check(paths):
        if any(p.endswith("item00004.txt") for p in paths):
            raise ValueError("cannot score item 4")
    _run = run
    def run(mini_batch):
        _check(mini_batch)
        return _run(mini_batch)
    """
    )
    job = make_job(tmp_path, script, _yaml(mbs=2, retries=2), files=10)
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stderr + r.stdout
    assert (r.job / "outputs" / "out.txt").read_text().splitlines() == _expected(10, {4, 5})
    bad = [row for row in r.report() if row["mini_batch_id"] == "000000002"]
    assert [row["attempt"] for row in bad] == ["1", "2", "3"]
    assert {row["status"] for row in bad} == {"failed"}
    assert all("ValueError: cannot score item 4" in row["error"] for row in bad)
    errors = (r.logs / "job_error.txt").read_text()
    assert "3 x [failed] ValueError: cannot score item 4" in errors
    tracebacks = "".join(p.read_text() for p in (r.logs / "user" / "error" / "n1").iterdir())
    assert "raise ValueError" in tracebacks


def test_threshold_exceeded_fails_with_root_cause(tmp_path: Path) -> None:
    """mini_batch_error_threshold exceeded: exit 42, job_result leads with the first error."""
    script = """
    def run(mini_batch):
        raise RuntimeError("model not loaded")
    """
    job = make_job(
        tmp_path, script, _yaml(mbs=5, retries=0, extra="mini_batch_error_threshold: 1"), files=20
    )
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 42, r.stderr + r.stdout
    text = r.result_text()
    assert text.startswith("Failed\nReason: ")
    assert "mini_batch_error_threshold=1" in text
    assert "First error: mini-batch" in text
    assert "RuntimeError: model not loaded" in text
    assert 'raise RuntimeError("model not loaded")' in text
    assert "Full traceback: " in text
    assert "Failed" in r.stdout and "RuntimeError: model not loaded" in r.stdout
    assert not (r.job / "outputs" / "out.txt").exists()


def test_run_that_hangs_is_timed_out_with_stack_dump(tmp_path: Path) -> None:
    """A run() past retry_settings.timeout is stopped, its stacks dumped, and retried."""
    script = (
        ECHO
        + """
    import time
    _run = run
    def run(mini_batch):
        if any(p.endswith("item00002.txt") for p in mini_batch):
            wait_forever_in_user_code()
        return _run(mini_batch)
    def wait_forever_in_user_code():
        while True:
            time.sleep(0.05)
    """
    )
    job = make_job(tmp_path, script, _yaml(mbs=1, retries=1, timeout=2), files=4)
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stderr + r.stdout
    assert (r.job / "outputs" / "out.txt").read_text().splitlines() == _expected(4, {2})
    hung = [row for row in r.report() if row["mini_batch_id"] == "000000002"]
    assert [(row["attempt"], row["status"]) for row in hung] == [("1", "timeout"), ("2", "timeout")]
    dumps = "".join(p.read_text() for p in (r.logs / "user" / "error" / "n1").iterdir())
    assert "wait_forever_in_user_code" in dumps
    assert "(SIGTERM, sent by prsd)" in r.main_logs() or "(SIGKILL, sent by prsd)" in r.main_logs()


def test_worker_killed_by_sigkill_is_replaced_and_batch_retried(tmp_path: Path) -> None:
    """A worker that SIGKILLs itself once: replaced, mini-batch retried, exit in _main.txt."""
    script = (
        ECHO
        + """
    import signal
    _run = run
    def run(mini_batch):
        flag = os.path.join(os.environ["MARKER_DIR"], "killed-once")
        if any(p.endswith("item00003.txt") for p in mini_batch) and not os.path.exists(flag):
            open(flag, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        return _run(mini_batch)
    """
    )
    marker = tmp_path / "marker"
    marker.mkdir()
    # Workers see only the job's variables, never the agent's (docs/supervision.md).
    yaml = _yaml(mbs=2, workers=2).replace(
        "      append_row_to:",
        f"      environment_variables: {{MARKER_DIR: {marker}}}\n      append_row_to:",
    )
    job = make_job(tmp_path, script, yaml, files=8)
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stderr + r.stdout
    assert (r.job / "outputs" / "out.txt").read_text().splitlines() == _expected(8)
    rows = [row for row in r.report() if row["mini_batch_id"] == "000000001"]
    assert [row["status"] for row in rows] == ["crashed", "succeeded"]
    assert "exits with returncode -9" in r.main_logs()
    assert "process002 started" in r.main_logs(), "a replacement worker takes the next number"


def test_fewer_results_than_inputs_counts_failed_items(tmp_path: Path) -> None:
    """run() returning fewer elements: failed items counted; item_error_threshold applies."""
    script = """
    def run(mini_batch):
        return [p for p in mini_batch if not p.endswith("0.txt")]
    """
    ok = make_job(tmp_path / "ok", script, _yaml(mbs=5), files=20)
    r = run_prsd(ok, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stderr + r.stdout
    assert "18 of 20 items succeeded" in r.result_text()
    bad = make_job(
        tmp_path / "bad", script, _yaml(mbs=5, extra="item_error_threshold: 1"), files=20
    )
    r = run_prsd(bad, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 42, r.stderr + r.stdout
    assert "items failed, more than item_error_threshold=1" in r.result_text()


def test_none_return_fails_the_attempt_naming_the_type(tmp_path: Path) -> None:
    """run() returning None fails at once, naming the type and the mini-batch."""
    script = """
    def run(mini_batch):
        return None
    """
    job = make_job(
        tmp_path, script, _yaml(mbs=5, retries=0, extra="mini_batch_error_threshold: 0"), files=5
    )
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 42
    assert "run() returned NoneType for mini-batch 000000000" in r.result_text()


def test_v1_script_with_side_input_and_azureml_entry_script(tmp_path: Path) -> None:
    """A v1 job: v1 key names, azureml_user EntryScript, parse_known_args, a side input."""
    script = """
    import argparse, os
    from azureml_user.parallel_run import EntryScript
    parser = argparse.ArgumentParser()
    parser.add_argument("--labels", required=True)
    args, _unknown = parser.parse_known_args()
    def init():
        global LABELS
        EntryScript().logger.info("loading labels from %s", args.labels)
        LABELS = dict(line.split(",") for line in open(os.path.join(args.labels, "labels.csv")).read().split())
    def run(mini_batch):
        es = EntryScript()
        return [f"{os.path.basename(p)} {LABELS[os.path.basename(p)]} {es.agent_name}" for p in mini_batch]
    """
    yaml_text = """
    name: v1-job
    entry_script: score.py
    source_directory: ./code
    input_data: ./data
    mini_batch_size: "4"
    process_count_per_node: 2
    output_action: append_row
    append_row_file_name: results.txt
    run_invocation_timeout: 30
    run_max_try: 2
    side_inputs:
      labels: ./labels
    task:
      program_arguments: "--labels ./labels"
    """
    job = make_job(tmp_path, script, yaml_text, files=9)
    (job / "labels").mkdir()
    (job / "labels" / "labels.csv").write_text(
        "\n".join(f"item{i:05d}.txt,{'cat' if i % 2 else 'dog'}" for i in range(9))
    )
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stderr + r.stdout
    lines = (r.job / "outputs" / "results.txt").read_text().splitlines()
    assert [line.rsplit(" ", 1)[0] for line in lines] == [
        f"item{i:05d}.txt {'cat' if i % 2 else 'dog'}" for i in range(9)
    ]
    assert {line.rsplit(" ", 1)[1] for line in lines} <= {"process000", "process001"}
    logs = "".join(p.read_text() for p in (r.logs / "user" / "entry_script_log" / "n1").iterdir())
    assert "loading labels from" in logs and str(job / "labels") in logs


def test_job_python_is_a_second_venv(tmp_path: Path) -> None:
    """task.environment.python runs the workers in another venv with its own library."""
    venv = tmp_path / "jobenv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "only_in_jobenv.py").write_text("MARK = 'from the job environment'\n")
    script = """
    import sys
    import only_in_jobenv
    def run(mini_batch):
        return [f"{only_in_jobenv.MARK} {sys.prefix}" for _ in mini_batch]
    """
    yaml_text = _yaml(mbs=2).replace(
        "  entry_script: score.py",
        f"  entry_script: score.py\n      environment: {{python: {venv}/bin/python}}",
    )
    job = make_job(tmp_path, script, yaml_text, files=3)
    import importlib.util

    assert importlib.util.find_spec("only_in_jobenv") is None
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stderr + r.stdout
    lines = (r.job / "outputs" / "out.txt").read_text().splitlines()
    assert lines == [f"from the job environment {venv}"] * 3


def test_azure_v2_yaml_with_inputs_and_outputs(tmp_path: Path) -> None:
    """Azure v2 YAML as written: inputs/outputs sections and ${{...}} references."""
    script = """
    import argparse, os
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("--suffix")
    parser.add_argument("--out_dir")
    args, _ = parser.parse_known_args()
    def run(mini_batch):
        os.makedirs(args.out_dir, exist_ok=True)
        return [os.path.basename(p) + args.suffix for p in mini_batch]
    """
    yaml_text = """
    $schema: https://azuremlschemas.azureedge.net/latest/parallelJob.schema.json
    type: parallel
    display_name: v2 job
    compute: azureml:cpu-cluster
    inputs:
      images:
        type: uri_folder
        path: ./data
        mode: ro_mount
      suffix: "_scored"
    outputs:
      scores:
        type: uri_folder
        path: azureml://datastores/workspaceblobstore/paths/scores
      extra:
        type: uri_folder
    input_data: ${{inputs.images}}
    mini_batch_size: "2"
    resources:
      instance_count: 1
      instance_type: Standard_D2
    retry_settings:
      max_retries: 1
      timeout: 30
    task:
      type: run_function
      code: ./code
      entry_script: score.py
      environment: azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu@latest
      program_arguments: --suffix ${{inputs.suffix}} --out_dir ${{outputs.extra}} $[[--missing ${{inputs.absent}}]]
      append_row_to: ${{outputs.scores}}
    """
    job = make_job(tmp_path, script, yaml_text, files=5)
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stderr + r.stdout
    out = r.job / "outputs" / "scores" / "parallel_run_step.txt"
    assert out.read_text().splitlines() == [f"item{i:05d}.txt_scored" for i in range(5)]
    assert (r.job / "outputs" / "extra").is_dir()


def test_bad_spec_is_one_line_without_traceback(tmp_path: Path) -> None:
    """A broken spec: exit 2, one line naming file, key and what is expected."""
    job = make_job(tmp_path, ECHO, _yaml().replace("timeout: 60", 'timeout: "soon"'), files=1)
    r = run_prsd(job, tmp_path / "spool")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "job.yaml" in lines[0] and "retry_settings.timeout" in lines[0]
    assert not any((tmp_path / "spool" / "inbox").iterdir())


def test_missing_entry_script_is_refused(tmp_path: Path) -> None:
    """A spec naming a script that does not exist is refused before anything runs."""
    job = make_job(tmp_path, ECHO, _yaml().replace("score.py", "nope.py"), files=1)
    r = run_prsd(job, tmp_path / "spool")
    assert r.returncode == 2
    assert "nope.py" in r.stderr and "Traceback" not in r.stderr


def test_init_failure_fails_the_job_quoting_the_error(tmp_path: Path) -> None:
    """init() raising in every worker: the node gives up and the job fails with the init error."""
    script = """
    def init():
        raise FileNotFoundError("model.pkl is missing")
    def run(mini_batch):
        return mini_batch
    """
    job = make_job(tmp_path, script, _yaml(mbs=2, workers=1), files=4)
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 42, r.stderr + r.stdout
    text = r.result_text()
    assert "FileNotFoundError: model.pkl is missing" in text
    assert str(r.logs / "user" / "error" / "n1") in text
    assert os.path.exists(r.logs / "user" / "error" / "n1" / "process000.txt")
