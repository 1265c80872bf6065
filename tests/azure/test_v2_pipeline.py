"""A v2 ``@pipeline`` (command step, then ``parallel_run_function``) from the real azure-ai-ml.

The notebook's cells run as a script whose only prsd line is ``MLClient(spool=...)``;
real daemons serve the spool.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

import yaml

from tests.azure.kit import NOTEBOOKS, daemons

if TYPE_CHECKING:
    from pathlib import Path

WORDS = {
    "a.txt": "one two three",
    "b.txt": "four five",
    "c.txt": "six",
    "d.txt": "",
    "e.txt": "x y z w",
}


def _notebook(
    tmp: Path, *args: str, script: str = "v2_pipeline.py"
) -> subprocess.CompletedProcess[str]:
    shutil.copytree(NOTEBOOKS / "v2src", tmp / "v2src")
    (tmp / "raw").mkdir()
    for name, text in WORDS.items():
        (tmp / "raw" / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "PRSD_SPOOL"}
    return subprocess.run(
        [sys.executable, str(NOTEBOOKS / script), str(tmp / "spool"), *args],
        cwd=tmp, capture_output=True, text=True, timeout=240, env=env, check=False,
    )  # fmt: skip


def test_v2_pipeline_with_parallel_run_function_runs_and_downloads(tmp_path: Path) -> None:
    with daemons(tmp_path / "spool"):
        r = _notebook(tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "status Completed" in r.stdout and "downloaded" in r.stdout
    assert "Execution Summary" in r.stdout
    assert "steps [('batch_score', 'Completed'), ('prepared', 'Completed')]" in r.stdout
    rows = (tmp_path / "results" / "named-outputs" / "scores" / "parallel_run_step.txt").read_text()
    got = sorted(tuple(line.split(",")) for line in rows.splitlines())
    want = sorted(
        (f"{i}-{n}", str(len(t.split())), "7") for n, t in WORDS.items() for i in range(2)
    )
    assert got == want
    # The file prsd ran is the SDK's own serialisation: the step's component is the SDK's.
    (file,) = (tmp_path / ".prsd-submissions").glob("v2-prep-and-score-*/pipeline.yml")
    data = yaml.safe_load(file.read_text())
    assert data["jobs"]["batch_score"]["component"] == "./components/batch_score.yml"
    comp = yaml.safe_load((file.parent / "components" / "batch_score.yml").read_text())
    assert comp["type"] == "parallel" and comp["inputs"]["k"] == {"type": "integer", "default": "5"}
    assert data["inputs"]["raw_data"]["path"] == str(tmp_path / "raw")
    assert data["jobs"]["batch_score"]["outputs"]["job_output_path"] == "${{parent.outputs.scores}}"
    # Another process (a new kernel) gets the job back from its file, with the SDK's load_job.
    name = r.stdout.split("submitted ", 1)[1].split()[0]
    code = (
        "from prsd.azure import MLClient; "
        f"j = MLClient(spool='spool').jobs.get('{name}'); print(type(j).__name__, j.status, sorted(j.jobs))"
    )
    again = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert again.stdout.splitlines()[-1] == "PipelineJob Completed ['batch_score', 'prepared']"


def test_v2_failed_job_raises_the_sdk_job_exception_with_prsd_reason(tmp_path: Path) -> None:
    with daemons(tmp_path / "spool"):
        r = _notebook(tmp_path, "fail")
    assert r.returncode != 0
    assert "azure.ai.ml.exceptions.JobException" in r.stderr, r.stderr[-3000:]
    assert "ended Failed" in r.stderr and "step batch_score ended Failed" in r.stderr
    assert "downloaded" not in r.stdout


def test_v2_lone_command_job_runs_as_a_one_step_pipeline(tmp_path: Path) -> None:
    with daemons(tmp_path / "spool"):
        r = _notebook(tmp_path, script="v2_command.py")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "prepared 15 files" in r.stdout and "status Completed" in r.stdout
    got = sorted(p.name for p in (tmp_path / "results" / "named-outputs" / "copies").iterdir())
    assert got == sorted(f"{i}-{n}" for n in WORDS for i in range(3))


def test_from_config_in_local_mode_runs_without_daemons(tmp_path: Path) -> None:
    """``MLClient.from_config()`` finds ``.azureml/config.json`` in a parent folder (as
    Azure's SDK does); its ``prsd`` section names the spool (relative to the file) and
    ``local``: the job runs in a background ``prsd run``, no daemons."""
    (tmp_path / ".azureml").mkdir()
    config = {"subscription_id": "0000", "resource_group": "rg", "workspace_name": "ws",
              "prsd": {"spool": "../spool", "local": True}}  # fmt: skip
    (tmp_path / ".azureml" / "config.json").write_text(json.dumps(config))
    work = tmp_path / "notebooks"
    work.mkdir()
    r = _notebook(work, "from_config")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert f"Found the config file in: {tmp_path / '.azureml' / 'config.json'}" in r.stdout
    assert (  # Azure's notebooks look their cluster up: on prsd it is the fleet
        f"AmlCompute(name='cpu-cluster'): on prsd, the agents serving {tmp_path / 'spool'} "
        "(nothing is provisioned)"
    ) in r.stdout
    assert "status Completed" in r.stdout and "downloaded" in r.stdout
    name = r.stdout.split("submitted ", 1)[1].split()[0]
    assert (tmp_path / "spool" / "pipelines" / name / "final.json").is_file()
    assert not (work / "spool").exists()
    assert "warning: queued" not in r.stderr


def test_a_v2_submission_nothing_serves_says_so(tmp_path: Path) -> None:
    code = (
        "import sys; from azure.ai.ml import command; from prsd.azure import MLClient; "
        "job = command(command='echo hi', environment='azureml:AzureML-x@latest'); "
        "j = MLClient(spool='spool').jobs.create_or_update(job, experiment_name='lonely'); "
        "print('submitted', j.name)"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().splitlines()[-1] == (
        "warning: queued (MLClient(..., local=True) runs it in this machine, no daemons): "
        "no leader has ever run on this spool; start `prsd leader` (or `prsd run`)"
    )


def test_from_config_without_a_spool_names_both_places(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"subscription_id": "0000"}')
    code = "from prsd.azure import MLClient; MLClient.from_config()"
    env = {k: v for k, v in os.environ.items() if k != "PRSD_SPOOL"}
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env,
        check=False,
    )  # fmt: skip
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == (
        'prsd.azure.config.ConfigError: no spool named: add "prsd": {"spool": ...} to '
        f"{tmp_path / 'config.json'} or set PRSD_SPOOL"
    )
