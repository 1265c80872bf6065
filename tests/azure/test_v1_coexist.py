"""prsd's client-side ``azureml`` (compat/azureml-v1) in a job's environment is no real SDK.

A notebook registers a model with the client package's ``Model.register``; the entry
script, whose environment has the client package installed (a copy on PYTHONPATH, as
``pip install ./compat/azureml-v1`` lays it out), still gets the workers' offline
``azureml.core`` and finds the model there.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.jobkit import make_job, run_prsd

CLIENT = Path(__file__).resolve().parents[2] / "compat" / "azureml-v1" / "azureml"

SCRIPT = """
    import azureml.core
    from azureml.core import Model, Run

    def run(mini_batch):
        path = Model.get_model_path("churn")
        who = Run.get_context().id.split("_")[0]
        return [f"{who}:{open(path).read().strip()}" for _ in mini_batch]
"""

YAML = """
    input_data: ./data
    mini_batch_size: "2"
    resources: {max_concurrency_per_instance: 1}
    retry_settings: {max_retries: 0, timeout: 30}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
      environment_variables: {PYTHONPATH: "SITE"}
"""


def _register(tmp: Path, spool: Path) -> None:
    """``Model.register`` from a notebook, through the client package."""
    (tmp / "config.json").write_text(json.dumps({"prsd": {"spool": str(spool)}}))
    (tmp / "model.txt").write_text("v-two\n")
    code = (
        "from azureml.core import Model, Workspace\n"
        "ws = Workspace.from_config()\n"
        "Model.register(ws, model_path='model.txt', model_name='churn')\n"
        "m = Model.register(ws, model_path='model.txt', model_name='churn')\n"
        "print(m.version, Model.get_model_path('churn', _workspace=ws))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp, capture_output=True, text=True, check=True
    )
    assert out.stdout.splitlines()[-1] == f"2 {spool / 'models' / 'churn' / '2' / 'model.txt'}"


def test_the_client_package_leaves_entry_scripts_the_offline_azureml_core(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    _register(tmp_path, spool)
    site = tmp_path / "site"
    shutil.copytree(CLIENT, site / "azureml")
    job = make_job(tmp_path, SCRIPT, YAML.replace("SITE", str(site)), files=2)
    r = run_prsd(job, spool)
    assert r.returncode == 0, r.stdout + r.stderr + r.main_logs()
    assert r.output("out.txt").read_text().splitlines() == ["OfflineRun:v-two"] * 2


def test_without_the_marker_the_copy_would_count_as_a_real_sdk(tmp_path: Path) -> None:
    """The control: the marker file alone decides (the copy's Run.get_context refuses)."""
    spool = tmp_path / "spool"
    _register(tmp_path, spool)
    site = tmp_path / "site"
    shutil.copytree(CLIENT, site / "azureml")
    (site / "azureml" / "core" / "_prsd_client.py").unlink()
    job = make_job(tmp_path, SCRIPT, YAML.replace("SITE", str(site)), files=2)
    r = run_prsd(job, spool)
    assert r.returncode != 0
    errors = "".join(p.read_text() for p in r.logs.rglob("*.txt") if "error" in p.as_posix())
    assert "Run.get_context() outside an entry script is not supported" in errors
