"""The v1 layer's pure parts and its refusals: no spool, no daemons."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from azureml._prsd.config import ConfigError, read_settings
from azureml._prsd.datapaths import relative_format, sources
from azureml._prsd.pipeline_yaml import draft, step_key
from azureml.core import Dataset, Datastore, Environment, Experiment, Workspace
from azureml.core.compute import ComputeTarget
from azureml.core.conda_dependencies import CondaDependencies, is_sdk_package
from azureml.data import OutputFileDatasetConfig
from azureml.exceptions import ComputeTargetException
from azureml.pipeline.core import Pipeline, PipelineData, PipelineParameter
from azureml.pipeline.steps import ParallelRunConfig, ParallelRunStep, PythonScriptStep
from prsd.azure.watch import Tail, azure_status

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"workspace_name": "w", "prsd": {"spool": "spool"}}))
    return Workspace.from_config(str(config))


def test_settings_spool_relative_to_the_file_or_from_the_environment(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"prsd": {"spool": "s", "datastores": {"raw": "/data/raw"}}}))
    s = read_settings(config, environ={})
    assert s.spool == tmp_path / "s"
    assert s.datastore_folder("raw").as_posix() == "/data/raw"
    assert (
        s.datastore_folder("workspaceblobstore")
        == tmp_path / "s" / "datastores" / "workspaceblobstore"
    )
    config.write_text(json.dumps({"subscription_id": "x"}))
    assert read_settings(config, environ={"PRSD_SPOOL": "/sp"}).spool.as_posix() == "/sp"
    with pytest.raises(
        ConfigError, match=r'add "prsd": \{"spool": \.\.\.\} to .* or set PRSD_SPOOL'
    ):
        read_settings(config, environ={})


def test_step_names_prsd_accepts_unique_in_the_pipeline() -> None:
    taken: set[str] = set()
    assert step_key("summarize-file-size", taken) == "summarize_file_size"
    assert step_key("summarize file size", taken) == "summarize_file_size_2"
    assert step_key("3rd step", taken) == "_3rd_step"


def test_dataset_paths_and_partition_format_relative_to_the_folder(ws: Workspace) -> None:
    store = ws.get_default_datastore()
    (src,) = sources((store, "dataset_partition_test/*/*/*.wav"))
    assert src.folder == store.folder / "dataset_partition_test" and src.pattern == "*/*/*.wav"
    fmt = "dataset_partition_test/{user}/{season}/{genres}.wav"
    assert relative_format(fmt, src) == "{user}/{season}/{genres}.wav"
    assert relative_format("{user}/{genres}.wav", src) == "{user}/{genres}.wav"
    (whole,) = sources(store.path("raw"))
    assert whole.pattern == "**"
    with pytest.raises(ValueError, match="is a URL"):
        sources("https://x/y.csv")


def test_environment_without_azure_sdk_packages() -> None:
    assert is_sdk_package("azureml-dataset-runtime[fuse]") and is_sdk_package("azureml-core")
    assert not is_sdk_package("azure-storage-blob")
    env = Environment("e")
    env.python.conda_dependencies = CondaDependencies.create(pip_packages=["azureml-core"])
    assert env.prsd_environment("") is None  # nothing left to build: the agent's Python
    assert env.prsd_environment("/opt/py/bin/python") == {"python": "/opt/py/bin/python"}
    env.python.conda_dependencies.add_pip_package("scikit-learn==1.5")
    conda = env.prsd_environment("")
    assert conda is not None
    assert conda["conda_file"]["dependencies"] == ["pip", {"pip": ["scikit-learn==1.5"]}]


def test_statuses_in_azure_words() -> None:
    assert [azure_status(s) for s in ("Waiting", "Queued", "Running", "Completed", "Failed")] == [
        "NotStarted",
        "Queued",
        "Running",
        "Finished",
        "Failed",
    ]
    assert azure_status("Completed with failures") == "Finished"


def test_tail_returns_whole_new_lines_only(tmp_path: Path) -> None:
    tail = Tail(tmp_path, "*.txt")
    (tmp_path / "a.txt").write_text("one\ntw")
    assert tail.new_lines() == ["one"]
    with (tmp_path / "a.txt").open("a") as f:
        f.write("o\nthree\n")
    assert tail.new_lines() == ["two", "three"]
    assert tail.new_lines() == []


def test_a_command_step_feeding_a_parallel_step_is_bound_by_name(
    ws: Workspace, tmp_path: Path
) -> None:
    prepared = PipelineData("prepared", datastore=ws.get_default_datastore())
    scores = PipelineData("scores", datastore=ws.get_default_datastore())
    rows = PipelineParameter("rows", default_value=10)
    prep = PythonScriptStep(
        "prep.py",
        name="prep data",
        arguments=["--out", prepared, "--rows", rows],
        outputs=[prepared],
        source_directory=str(tmp_path),
    )
    cfg = ParallelRunConfig(
        environment=None,
        entry_script="score.py",
        error_threshold=-1,
        output_action="summary_only",
        compute_target="cpu",
        node_count=3,
        mini_batch_size="5",
        run_max_try=1,
        source_directory=str(tmp_path),
    )
    score = ParallelRunStep("score", cfg, inputs=[prepared], output=scores, arguments=["--x", rows])
    d = draft("exp", [prep, score], {"rows": 25}, "/py")
    jobs = d.data["jobs"]
    assert d.names == {"prep data": "prep_data", "score": "score"}
    assert jobs["prep_data"]["command"] == "python prep.py --out ${{outputs.prepared}} --rows 25"
    assert jobs["prep_data"]["environment"] == {"python": "/py"}
    assert jobs["prep_data"]["outputs"] == {"prepared": {"type": "uri_folder"}}
    assert jobs["score"]["inputs"]["prepared"] == {
        "path": "${{parent.jobs.prep_data.outputs.prepared}}"
    }
    assert jobs["score"]["input_data"] == "${{inputs.prepared}}"
    assert jobs["score"]["resources"] == {"instance_count": 3}
    assert jobs["score"]["retry_settings"] == {"max_retries": 0, "timeout": 60}
    assert jobs["score"]["task"]["program_arguments"] == ["--x", "25"]
    assert jobs["score"]["mini_batch_size"] == "5" and "append_row_to" not in jobs["score"]["task"]
    cfg.output_action = "append_row"
    scored = OutputFileDatasetConfig("scored", destination=(ws.get_default_datastore(), "out"))
    as_dataset = ParallelRunStep("score2", cfg, inputs=[prepared], output=scored)
    out = draft("exp", [prep, as_dataset], {}, "")
    assert out.data["jobs"]["score2"]["outputs"]["scored"] == {
        "type": "uri_file",
        "path": "azureml://datastores/workspaceblobstore/paths/scored/parallel_run_step.txt",
    }
    assert out.outputs["scored"] == ("score2", "parallel_run_step.txt")
    orphan = ParallelRunStep("orphan", cfg, inputs=[PipelineData("nowhere")])
    with pytest.raises(ValueError, match="reads 'nowhere', which no step of the pipeline writes"):
        draft("exp", [orphan], {}, "")


CALLS: dict[str, Callable[[Workspace], Any]] = {
    "Workspace.create": lambda ws: Workspace.create("x"),
    "Workspace.get_mlflow_tracking_uri": lambda ws: ws.get_mlflow_tracking_uri(),
    "Datastore.as_mount": lambda ws: ws.get_default_datastore().as_mount(),
    "Dataset.get_by_name": lambda ws: Dataset.get_by_name(ws, "mnist"),
    "_FileFactory.from_url": lambda ws: Dataset.File.from_url("x"),
    "FileDataset.mount": lambda ws: Dataset.File.from_files(
        (ws.get_default_datastore(), "a"), validate=False
    ).mount(),
    "TabularDataset.take": lambda ws: Dataset.Tabular.from_delimited_files(
        (ws.get_default_datastore(), "a.csv"), validate=False
    ).take(5),
    "TabularDataset.partition_by(partition_as_file_dataset=True)": lambda ws: (
        Dataset.Tabular.from_delimited_files(
            (ws.get_default_datastore(), "a.csv"), validate=False
        ).partition_by(["k"], ws.get_default_datastore(), partition_as_file_dataset=True)
    ),
    "azureml.core.ScriptRunConfig": lambda ws: (
        __import__("azureml.core", fromlist=["ScriptRunConfig"]).ScriptRunConfig
    ),
    "azureml.pipeline.steps.DatabricksStep": lambda ws: (
        __import__("azureml.pipeline.steps", fromlist=["DatabricksStep"]).DatabricksStep
    ),
    "Pipeline.publish": lambda ws: Pipeline(ws, []).publish("p"),
    "Experiment.submit(str)": lambda ws: Experiment(ws, "e").submit("train.py"),
    "Experiment.start_logging": lambda ws: Experiment(ws, "e").start_logging(),
    "Environment.register": lambda ws: Environment("e").register(ws),
    "Run.get_context() outside an entry script": lambda ws: __import__(
        "azureml.core", fromlist=["Run"]
    ).Run.get_context(),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_each_call_outside_the_surface_raises_the_named_error(ws: Workspace, call: str) -> None:
    with pytest.raises(NotImplementedError) as info:
        CALLS[call](ws)
    message = str(info.value)
    assert message.startswith(f"{call} is not supported by prsd's azureml v1 layer")
    assert "docs/azure-sdk.md" in message


def test_private_names_stay_attribute_errors(ws: Workspace) -> None:
    assert not hasattr(ws, "_repr_html_")
    assert not hasattr(Workspace, "__wrapped__")


def test_a_blob_container_needs_its_folder_and_an_unknown_target_is_named(
    ws: Workspace, tmp_path: Path
) -> None:
    with pytest.raises(
        ValueError, match=r'add "prsd": \{"blob_containers": \{"acct/images": "/mnt/images"\}\}'
    ):
        Datastore.register_azure_blob_container(ws, "images", "images", "acct")
    ws._settings.blob_containers["acct/images"] = tmp_path / "mnt"
    store = Datastore.register_azure_blob_container(ws, "images", "images", "acct")
    assert (
        store.folder == tmp_path / "mnt" and Datastore.get(ws, "images").folder == tmp_path / "mnt"
    )
    with pytest.raises(ComputeTargetException, match="'gpu' is not configured"):
        ComputeTarget(ws, "gpu")


def test_partition_columns_of_a_table_come_from_its_paths(ws: Workspace) -> None:
    store = ws.get_default_datastore()
    for region, rows in (("north", "a,b\n1,2\n"), ("south", "a,b\n3,4\n5,6\n")):
        (store.folder / "sales" / region).mkdir(parents=True)
        (store.folder / "sales" / region / "part.csv").write_text(rows)
    table = Dataset.Tabular.from_delimited_files(
        path=(store, "sales/*/part.csv"), partition_format="sales/{region}/part.csv"
    )
    assert table.partition_keys == ["region"]
    df = table.to_pandas_dataframe()
    assert df.to_dict("list") == {
        "a": [1, 3, 5],
        "b": [2, 4, 6],
        "region": ["north", "south", "south"],
    }
    entry, _ = table.prsd_input()  # an MLTable whose key columns come from the paths
    assert entry == {"type": "mltable", "path": str(store.folder / "sales")}
    mltable = yaml.safe_load((store.folder / "sales" / "MLTable").read_text())
    assert mltable["paths"] == [{"pattern": "./*/part.csv"}]
    assert mltable["transformations"][1] == {
        "extract_columns_from_partition_format": {"partition_format": "{region}/part.csv"}
    }
    parted = table.partition_by(["region"], target=(store, "by_region"), show_progress=False)
    entry, extra = parted.prsd_input()
    assert entry["type"] == "mltable" and extra == {}
    assert sorted(parted.to_pandas_dataframe()["region"]) == ["north", "south", "south"]


def test_a_pipeline_prsd_refuses_raises_its_reason_and_leaves_no_trace(
    ws: Workspace, tmp_path: Path
) -> None:
    store = ws.get_default_datastore()
    (tmp_path / "code").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.txt").write_text("a")
    store.upload(str(tmp_path / "data"), "inputs", show_progress=False)
    files = Dataset.File.from_files((store, "inputs"))
    cfg = ParallelRunConfig(environment=None, entry_script="absent.py", error_threshold=-1,
                            output_action="summary_only", compute_target="cpu", node_count=1,
                            source_directory=str(tmp_path / "code"))  # fmt: skip
    step = ParallelRunStep("score", cfg, inputs=[files.as_named_input("files")])
    with pytest.raises(
        ValueError, match=r"prsd refused the pipeline .*entry_script: 'absent\.py' is not a file"
    ):
        Experiment(ws, "refused").submit(Pipeline(ws, [step]))
    spool = tmp_path / "spool"
    assert not [p for p in (spool / "pipelines").iterdir() if not p.name.startswith(".")]
    assert not list((spool / "inbox").iterdir())
