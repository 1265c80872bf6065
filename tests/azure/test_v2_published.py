"""Azure's two published v2 parallel notebooks (3a_mnist_batch_identification and
1g_pipeline_with_parallel_nodes), their cells unchanged, with compat/azure-ai-ml: every
cell up to ``ml_client.jobs.create_or_update`` runs against a spool no daemon serves, and
the pipelines are accepted as published (their steps' conda files carried, Azure's pins
kept). The last cell, ``jobs.stream``, waits for daemons; the whole runs, with real
environment builds, are in docs/azure-examples.md. Stand-in data and models of the same
names (the runs here do not read them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

import yaml

from tests.azure.kit import NOTEBOOKS

if TYPE_CHECKING:
    from pathlib import Path

PUBLISHED = NOTEBOOKS / "v2published"


def _cells_before_stream(
    notebook: Path, cwd: Path, spool: Path
) -> subprocess.CompletedProcess[str]:
    """Run the notebook's cells but the last (``jobs.stream``) as one script from ``cwd``."""
    cells = notebook.read_text(encoding="utf-8").split("\n# %%\n")
    assert "ml_client.jobs.stream(" in cells[-1]
    script = cwd / "cells.py"
    script.write_text("\n".join(cells[:-1]), encoding="utf-8")
    config = {"subscription_id": "0000", "resource_group": "rg", "workspace_name": "ws"}
    (cwd / "config.json").write_text(json.dumps({**config, "prsd": {"spool": str(spool)}}))
    env = {k: v for k, v in os.environ.items() if k != "PRSD_SPOOL"}
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=cwd, capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip


def _pipeline(spool: Path) -> tuple[Path, dict[str, object]]:
    (folder,) = (spool / "pipelines").iterdir()
    return folder, json.loads((folder / "pipeline.json").read_text())


def _said_once(stderr: str, spool: Path) -> None:
    notes = [ln for ln in stderr.splitlines() if ln.startswith("prsd: note: ")]
    assert (
        f"prsd: note: azure.ai.ml.MLClient is prsd's (prsd-azure-ai-ml): jobs go to the spool "
        f"{spool}, not to Azure (workspace ws); only .jobs and .compute are served"
    ) in notes, stderr
    assert "prsd: note: the credential (InteractiveBrowserCredential) is accepted and not used" in (
        stderr
    )
    assert "warning: queued (MLClient(..., local=True) runs it in this machine" in stderr


def test_mnist_batch_prediction_notebook_is_accepted_as_published(tmp_path: Path) -> None:
    nb = tmp_path / "3a"
    shutil.copytree(PUBLISHED / "mnist", nb)
    (nb / "mnist_models").mkdir()  # stand-in: the TensorFlow checkpoint is not read here
    (nb / "mnist_models" / "saved_model.pb").write_bytes(b"stand-in")
    spool = tmp_path / "spool"
    r = _cells_before_stream(nb / "mnist_batch_prediction.py", nb, spool)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert f"Found the config file in: {nb / 'config.json'}" in r.stdout
    _said_once(r.stderr, spool)
    folder, record = _pipeline(spool)
    # the steps as the SDK's own serialiser names them (the components' names)
    parallel = "batch_inferencing_with_mini_batch_size"
    assert sorted(record["steps"]) == [parallel, "prepare_data"]  # type: ignore[call-overload]
    step = yaml.safe_load((folder / "steps" / parallel / "job.yaml").read_text())
    conda = step["jobs"][parallel]["task"]["environment"]["conda_file"]
    assert "python=3.7.6" in conda["dependencies"]  # Azure's pins, carried as published
    assert "tensorflow==1.15.2" in conda["dependencies"][-1]["pip"]
    prep = yaml.safe_load((folder / "steps" / "prepare_data" / "job.yaml").read_text())
    prep_conda = prep["jobs"]["prepare_data"]["task"]["environment"]["conda_file"]
    published = yaml.safe_load((nb / "script" / "environment_prepare.yml").read_text())
    assert prep_conda == published  # the component's conda file, inlined by load_component


def test_pipeline_with_parallel_nodes_notebook_is_accepted_as_published(tmp_path: Path) -> None:
    nb = tmp_path / "1g"
    shutil.copytree(PUBLISHED / "parallel_nodes", nb)
    for where, files in {
        "dataset/iris-mltable": ["iris.csv"],
        "dataset/mnist-data": ["0.png", "1.png"],
        "model/iris_model": ["model.pkl"],
    }.items():  # stand-ins of the published data and model (not read here)
        (nb / where).mkdir(parents=True)
        for name in files:
            (nb / where / name).write_bytes(b"stand-in")
        paths = [{"file": f"./{name}"} for name in files]
        (nb / where / "MLTable").write_text(yaml.safe_dump({"paths": paths}))
    spool = tmp_path / "spool"
    r = _cells_before_stream(nb / "pipeline_with_parallel_nodes.py", nb, spool)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    _said_once(r.stderr, spool)
    folder, record = _pipeline(spool)
    tabular = "batch_score_with_tabular_input"
    assert sorted(record["steps"]) == [  # type: ignore[call-overload]
        tabular,
        "file_batch_score",
        "prepare_file_tabular_data",
    ]
    step = folder / "steps" / tabular / "job.yaml"
    conda = yaml.safe_load(step.read_text())["jobs"][tabular]
    pip = conda["task"]["environment"]["conda_file"]["dependencies"][-1]["pip"]
    assert "scikit-learn==0.23.2" in pip and "azureml-dataset-runtime[pandas,fuse]" in pip
