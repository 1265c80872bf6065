"""v1 entry scripts that import ``azureml.core`` run in real workers, offline."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

V1_SAMPLE = """
    import os
    from azureml.core import Dataset, Model, Run
    from azureml.core.model import Model as ModelToo, ModelNotFoundError
    from azureml.core.run import Run as RunToo

    def init():
        global model, missing, dataset_error
        model = open(Model.get_model_path("mnist")).read().strip()
        assert ModelToo is Model and RunToo is Run
        try:
            Model.get_model_path("absent")
        except ModelNotFoundError as exc:
            missing = str(exc)
        try:
            Dataset.get_by_name(None, "mnist-data")
        except LookupError as exc:
            dataset_error = str(exc)

    def run(mini_batch):
        run = Run.get_context()
        run.log("x", 1)
        run.log_row("batch", size=len(mini_batch))
        run.log_list("names", [os.path.basename(p) for p in mini_batch])
        run.parent.log("parent_seen", run.parent.id)
        run.log("missing", missing)
        run.log("dataset", dataset_error)
        run.log("secrets", [run.get_secret("API_KEY"), run.get_secret("FROM_FILE")])
        run.log("who", [run.id, run.experiment.name])
        return [f"{os.path.basename(p)}:{model}" for p in mini_batch]
"""

YAML = """
    name: v1sample
    input_data: ./data
    mini_batch_size: "2"
    resources: {max_concurrency_per_instance: 1}
    retry_settings: {max_retries: 0, timeout: 30}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
      environment_variables: {API_KEY: "k-123"}
"""

REAL_SDK = """
    import azureml.core
    def run(mini_batch):
        return [azureml.core.MARK for _ in mini_batch]
"""


def test_v1_sample_imports_azureml_core_and_logs_metrics(tmp_path: Path) -> None:
    """Model.get_model_path in init(), Run.get_context().log in run(): rows in the metrics file."""
    job = make_job(tmp_path, V1_SAMPLE, YAML, files=4)
    (job / "code" / "secrets.env").write_text("# test secrets\nFROM_FILE=s-456\n")
    spool = tmp_path / "spool"
    (spool / "models" / "mnist" / "1").mkdir(parents=True)
    (spool / "models" / "mnist" / "1" / "model.txt").write_text("old\n")
    (spool / "models" / "mnist" / "3").mkdir()
    (spool / "models" / "mnist" / "3" / "model.txt").write_text("v3\n")
    r = run_prsd(job, spool, "--node-id", "n1")
    assert r.returncode == 0, r.stdout + r.stderr + r.main_logs()
    assert r.output("out.txt").read_text().splitlines() == [f"item{i:05d}.txt:v3" for i in range(4)]
    metrics = r.logs / "user" / "metrics" / "n1" / "process000.jsonl"
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    by_name: dict[str, list[object]] = {}
    for row in rows:
        by_name.setdefault(row["name"], []).append(row["value"])
    assert by_name["x"] == [1, 1]
    assert by_name["batch"] == [{"size": 2}, {"size": 2}]
    assert by_name["names"][0] == ["item00000.txt", "item00001.txt"]
    assert by_name["secrets"][0] == ["k-123", "s-456"]
    assert by_name["who"][0] == [f"OfflineRun_{r.job_id}_n1_process000", "v1sample"]
    assert by_name["parent_seen"][0] == f"OfflineRun_{r.job_id}"
    missing = str(by_name["missing"][0])
    assert "model 'absent'" in missing and str(spool / "models" / "absent") in missing
    assert "PRSD_MODELS_DIR (not set)" in missing
    assert "no dataset registry" in str(by_name["dataset"][0])


def test_a_real_azureml_core_in_the_job_environment_is_used(tmp_path: Path) -> None:
    """The offline shim never shadows an azureml.core the job's environment has."""
    site = tmp_path / "site"
    (site / "azureml" / "core").mkdir(parents=True)
    (site / "azureml" / "core" / "__init__.py").write_text('MARK = "real-sdk"\n')
    yaml_text = YAML.replace('{API_KEY: "k-123"}', f'{{PYTHONPATH: "{site}"}}')
    r = run_prsd(make_job(tmp_path, REAL_SDK, yaml_text, files=2), tmp_path / "spool")
    assert r.returncode == 0, r.stdout + r.stderr + r.main_logs()
    assert r.output("out.txt").read_text().splitlines() == ["real-sdk", "real-sdk"]
