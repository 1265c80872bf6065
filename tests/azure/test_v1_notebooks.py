"""Azure's v1 ParallelRunStep notebooks, cell by cell, against a spool: real daemons or prsd run."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

import pandas as pd

from tests.azure.kit import NOTEBOOKS, SOUNDS, daemons, run_cells, workspace
from tests.helpers import wait_until
from tests.srcpkg import make_sdist

if TYPE_CHECKING:
    from pathlib import Path


def _table(stdout: str, marker: str) -> pd.DataFrame:
    """The CSV the notebook's last cell printed after ``marker``."""
    return pd.read_csv(io.StringIO(stdout.split(marker, 1)[1]))


def test_file_dataset_partition_per_folder_on_daemons(tmp_path: Path) -> None:
    """The notebook as published; only config.json (the spool) is new. Six rows, as on Azure."""
    spool = tmp_path / "spool"
    ws = workspace(tmp_path / "ws", spool)
    with daemons(spool):
        cells = run_cells("file_dataset_partition_per_folder.py", ws)
    assert cells.returncode == 0, cells.stdout[-3000:] + cells.stderr[-3000:]
    out = cells.stdout
    assert "Workspace name: ws" in out
    assert "['user', 'season', 'genres']" in out
    assert "creating a new compute target..." in out
    assert "'provisioningState': 'Succeeded'" in out
    assert "StepRun( summarize-file-size ) Status: Finished" in out
    assert "PipelineRun Status: Finished" in out
    assert "Prediction has 6 rows" in out
    df = _table(out, "Prediction has 6 rows\n")
    groups = {(u, g) for u, g in zip(df["user"], df["genres"], strict=True)}
    assert groups == {("user1", "disco"), ("user1", "orchestra"), ("user2", "piano"),
                      ("user3", "spirituality"), ("user4", "piano")}  # fmt: skip
    for row in df.itertuples(index=False):
        size = SOUNDS[row[0].removesuffix(".wav")]
        assert row[1] == size
        total = 2 * size if row[3] == "user4" else size
        assert row[5] == total and abs(row[2] - size / total) < 1e-9
    # The datastore is a folder under the spool, as the notebook uploaded it.
    store = spool / "datastores" / "workspaceblobstore" / "dataset_partition_test"
    assert sorted(p.relative_to(store).as_posix() for p in store.rglob("*.wav")) == [
        "user1/fall/orchestra.wav", "user1/winter/disco.wav", "user2/summer/piano.wav",
        "user3/fall/spirituality.wav", "user4/fall/piano.wav", "user4/spring/piano.wav",
    ]  # fmt: skip


OJ_COLUMNS = ["WeekStarting", "Store", "Brand", "Quantity", "logQuantity", "Advert", "Price",
              "Age60", "COLLEGE", "INCOME", "Hincome150", "Large HH", "Minorities",
              "WorkingWoman", "SSTRDIST", "SSTRVOL", "CPDIST5", "CPWVOL5"]  # fmt: skip


def _oj_sales(path: Path) -> pd.DataFrame:
    """Orange juice sales in the layout of Azure's dominicks_OJ.csv: 3 stores, 3 brands, 4 weeks."""
    rows = []
    for week in range(4):
        for s, store in enumerate((2, 5, 8)):
            for b, brand in enumerate(("tropicana", "minute.maid", "dominicks")):
                income = 10.0 + s + 0.5 * b + 0.01 * week
                rows.append([f"1990-06-{14 + 7 * week}", store, brand, 1000 + week, 9.1, b % 2,
                             1.5 + b, 0.2, 0.3, income, 0.4, 0.1, 0.2, 0.3, 2.1, 1.2, 1.9, 0.4])  # fmt: skip
    df = pd.DataFrame(rows, columns=OJ_COLUMNS)
    df.to_csv(path, index=False)
    return df


def test_tabular_dataset_partition_per_column_in_the_background(tmp_path: Path) -> None:
    """The v1 tabular partition_by flow; the pipeline runs in a background ``prsd run``."""
    ws = workspace(tmp_path / "ws", tmp_path / "spool", local=True)
    sales = _oj_sales(ws / "oj.csv")
    cells = run_cells("tabular_dataset_partition_per_column.py", ws)
    assert cells.returncode == 0, cells.stdout[-3000:] + cells.stderr[-3000:]
    out = cells.stdout
    assert "[36 rows x 18 columns]" in out  # dataset.to_pandas_dataframe(), printed
    assert "['Store', 'Brand']" in out
    assert "PipelineRun Status: Finished" in out
    assert "Prediction has  36  rows" in out
    head = _table(out, "Prediction has  36  rows\n")  # df.head(10), as the notebook shows it
    assert list(head.columns)[-3:] == ["Store", "Brand", "total_income"] and len(head) == 10
    (result,) = (tmp_path / "spool" / "jobs").glob("*/outputs/inferences/revenue_outputs.txt")
    df = pd.read_csv(result, delimiter=" ", header=None, names=list(head.columns))
    expected = dict(sales.groupby(["Store", "Brand"])["INCOME"].sum().items())
    assert len(df) == 36 and len(df.groupby(["Store", "Brand"])) == 9
    for (store, brand), group in df.groupby(["Store", "Brand"]):
        assert len(group) == 4
        assert set(group["total_income"].round(6)) == {round(expected[(store, brand)], 6)}
        mine = sales[(sales.Store == store) & (sales.Brand == brand)]
        assert sorted(group["INCOME"].round(6)) == sorted(mine["INCOME"].round(6))
    target = tmp_path / "spool" / "datastores" / "workspaceblobstore" / "partition_by_key_res"
    (table,) = target.iterdir()
    assert len(list(table.rglob("*.parquet"))) == 9 and (table / "MLTable").is_file()


def test_script_step_feeds_a_parallel_step_that_loads_a_registered_model(tmp_path: Path) -> None:
    """Our own v1 notebook: PythonScriptStep -> PipelineData -> ParallelRunStep, on daemons."""
    spool = tmp_path / "spool"
    ws = workspace(tmp_path / "ws", spool)
    shutil.copytree(NOTEBOOKS / "v1chain", ws / "v1chain")
    with daemons(spool):
        cells = run_cells("v1_chain.py", ws)
    assert cells.returncode == 0, cells.stdout[-3000:] + cells.stderr[-3000:]
    out = cells.stdout
    assert "Model(workspace='ws', name=factor, id=factor:1, version=1)" in out
    assert "status Finished" in out
    assert "steps [('make numbers', 'Finished'), ('score numbers', 'Finished')]" in out
    assert "wrote 6 files" in out  # the command step's log, streamed; count came from submit
    rows = sorted(f"n{i:02d}.txt {3 * i}" for i in range(6))
    assert f"rows {['', *rows]}" in out
    assert (spool / "models" / "factor" / "1" / "factor.txt").read_text() == "3"


def test_a_compute_targets_status_counts_the_live_agents(tmp_path: Path) -> None:
    from azureml.core import Workspace
    from azureml.core.compute import AmlCompute, ComputeTarget

    spool = tmp_path / "spool"
    (tmp_path / "config.json").write_text(
        json.dumps({"prsd": {"spool": str(spool), "compute": ["cpu"]}})
    )
    ws = Workspace.from_config(str(tmp_path / "config.json"))
    target = ComputeTarget(ws, "cpu")
    assert type(target) is AmlCompute and list(ws.compute_targets) == ["cpu"]
    assert target.get_status().serialize()["currentNodeCount"] == 0
    with daemons(spool):
        wait_until(lambda: target.get_status().current_node_count > 0, 30, "the agent's heartbeat")
        assert target.get_status().serialize()["currentNodeCount"] == 1


def _iris(containers: Path, code: Path) -> pd.DataFrame:
    """The two blob containers the iris notebook reads, as local folders (mounts)."""
    rows = [(5.1, 3.5, 1.4, 0.2, "Setosa"), (7.0, 3.2, 4.7, 1.4, "Versicolor"),
            (6.3, 3.3, 6.0, 2.5, "Virginica")] * 20  # fmt: skip
    iris = pd.DataFrame(
        rows, columns=["sepal.length", "sepal.width", "petal.length", "petal.width", "variety"]
    )
    (containers / "sampledata" / "iris").mkdir(parents=True)
    iris.to_csv(containers / "sampledata" / "iris" / "iris.csv", index=False)
    (containers / "iris-model").mkdir()
    script = (
        "import pickle, sys; sys.path.insert(0, sys.argv[1]); from iris_rule import PetalRule; "
        "pickle.dump(PetalRule(), open(sys.argv[2], 'wb'))"
    )
    subprocess.run([sys.executable, "-c", script, str(code), str(containers / "iris-model" / "iris_model.pkl")],
                   check=True)  # fmt: skip
    return iris


def test_tabular_dataset_inference_iris_from_mounted_blob_containers(tmp_path: Path) -> None:
    """Azure's iris notebook: two blob containers mapped to folders, a model registered from one."""
    spool = tmp_path / "spool"
    mounts = tmp_path / "mnt"
    ws = workspace(tmp_path / "ws", spool, python=sys.executable, blob_containers={
        "pipelinedata/sampledata": str(mounts / "sampledata"),
        "pipelinedata/iris-model": str(mounts / "iris-model"),
    })  # fmt: skip
    iris = _iris(mounts, ws / "Code")
    with daemons(spool):
        cells = run_cells("tabular_dataset_inference_iris.py", ws)
    assert cells.returncode == 0, cells.stdout[-3000:] + cells.stderr[-3000:]
    assert "Registering model iris-prs" in cells.stdout
    assert "Prediction has  60  rows" in cells.stdout
    (result,) = (spool / "jobs").glob("*/outputs/inferences/iris_outputs.txt")
    df = pd.read_csv(result, delimiter=" ", header=None, names=list(iris.columns))
    names = {0: "Setosa", 1: "Versicolor", 2: "Virginica"}
    truth = dict(zip(iris["petal.length"], iris["variety"], strict=True))
    assert [names[v] for v in df["variety"]] == [truth[p] for p in df["petal.length"]]
    assert (mounts / "sampledata" / "iris" / "MLTable").is_file()  # the table, as prsd read it
    assert (spool / "models" / "iris-prs" / "1" / "iris_model.pkl").is_file()


def test_a_table_partitioned_by_its_folders_is_grouped_by_that_key(tmp_path: Path) -> None:
    """partition_format on a table: the MLTable's partition-format columns feed partition_keys."""
    ws = workspace(tmp_path / "ws", tmp_path / "spool", local=True)
    shutil.copytree(NOTEBOOKS / "v1regions", ws / "v1regions")
    for region, values in (("north", [1, 2]), ("south", [10, 20, 30]), ("west", [5])):
        (ws / "sales" / region).mkdir(parents=True)
        pd.DataFrame({"a": values, "b": [0] * len(values)}).to_csv(
            ws / "sales" / region / "part.csv", index=False
        )
    cells = run_cells("v1_regions.py", ws)
    assert cells.returncode == 0, cells.stdout[-3000:] + cells.stderr[-3000:]
    local = cells.stdout.split("PipelineRunId")[0]  # to_pandas_dataframe(), printed
    assert "region" in local and "north" in local and "west" in local
    assert "status Finished" in cells.stdout
    (result,) = (tmp_path / "spool" / "jobs").glob("*/outputs/totals/parallel_run_step.txt")
    rows = sorted(tuple(line.split()) for line in result.read_text().splitlines())
    assert rows == sorted([("1", "0", "north", "3", "north"), ("2", "0", "north", "3", "north"),
                           ("10", "0", "south", "60", "south"), ("20", "0", "south", "60", "south"),
                           ("30", "0", "south", "60", "south"), ("5", "0", "west", "5", "west")])  # fmt: skip


def _csv_after(stdout: str, marker: str) -> pd.DataFrame:
    """The CSV a cell printed after ``marker``, up to the blank line that ends it."""
    return pd.read_csv(io.StringIO(stdout.split(marker, 1)[1].split("\n\n", 1)[0]))


DIGITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def test_mnist_shaped_notebook_with_pipeline_parameters(tmp_path: Path) -> None:
    """PipelineParameters for the dataset, mini_batch_size and process_count_per_node, a
    model registered from a folder (its script joins file names onto get_model_path),
    a typo in pipeline_parameters refused, and a one-image re-run scoring one image."""
    spool = tmp_path / "spool"
    mounts = tmp_path / "mnt"
    ws = workspace(tmp_path / "ws", spool, python=sys.executable, local=True, blob_containers={
        "pipelinedata/sampledata": str(mounts / "sampledata"),
    })  # fmt: skip
    (mounts / "sampledata" / "mnist").mkdir(parents=True)
    for i, word in enumerate(DIGITS):
        (mounts / "sampledata" / "mnist" / f"{i}.png").write_text(word)
    (ws / "models").mkdir()
    meta = "".join(f"{w}={i}\n" for i, w in enumerate(DIGITS))
    (ws / "models" / "digits.model.meta").write_text(meta)
    (ws / "models" / "digits.model.index").write_text("index")
    cells = run_cells("file_dataset_mnist_params.py", ws)
    assert cells.returncode == 0, cells.stdout[-3000:] + cells.stderr[-3000:]
    out = cells.stdout
    assert (
        "refused: pipeline_parameters names 'typo_param', which no PipelineParameter of the "
        "pipeline has (it has: batch_size_param, mnist_param, process_count_param)"
    ) in out
    assert "Prediction has  10  rows" in out
    full = _csv_after(out, "Prediction has  10  rows\n")
    assert dict(zip(full["Filename"], full["Prediction"], strict=True)) == {
        f"{i}.png": i for i in range(10)
    }
    assert "Single image prediction has  1  rows" in out
    single = _csv_after(out, "Single image prediction has  1  rows\n")
    assert list(single["Filename"]) == ["0.png"] and list(single["Prediction"]) == [0]
    specs = sorted((spool / "jobs").glob("*/spec.json"), key=lambda p: p.stat().st_mtime)
    first, second = (json.loads(p.read_text()) for p in specs)
    assert (first["mini_batch_size"], first["max_concurrency_per_instance"]) == (5, 2)
    assert (second["mini_batch_size"], second["max_concurrency_per_instance"]) == (1, 1)


def test_a_conda_environment_pinning_38_is_built_and_shown_while_the_run_waits(
    tmp_path: Path,
) -> None:
    """Azure's shape of environment (python=3.8, azureml-defaults, a package with no wheel):
    built on the node's 3.8 and its phases printed by wait_for_completion(show_output=True)."""
    ws = workspace(tmp_path / "ws", tmp_path / "spool", local=True)
    shutil.copytree(NOTEBOOKS / "v1build", ws / "v1build")
    (ws / "imgs").mkdir()
    for i in range(4):
        (ws / "imgs" / f"{i}.png").write_bytes(bytes([i]) * 10)
    make_sdist(tmp_path / "links", "prsd-srconly-demo", sleep_s=3.0)
    (tmp_path / "index").mkdir()
    node = {
        "PRSD_ENV_CACHE": str(tmp_path / "envcache"),
        "PRSD_ENV_PYTHONS": "/root/.pyenv/versions/*/bin/python",
        "PRSD_CONDA": "none",
        "PIP_INDEX_URL": f"file://{tmp_path / 'index'}",
        "PIP_FIND_LINKS": str(tmp_path / "links"),
    }
    cells = run_cells("v1_build.py", ws, extra_env=node)
    assert cells.returncode == 0, cells.stdout[-3000:] + cells.stderr[-3000:]
    assert "status Finished" in cells.stdout
    shown = [ln for ln in cells.stdout.splitlines() if "building environment: " in ln]
    assert any(
        ln.startswith("node ")
        and ": building environment: building prsd-srconly-demo==0.1 from source (0:00:0" in ln
        for ln in shown
    ), cells.stdout[-3000:]
    (result,) = (tmp_path / "spool" / "jobs").glob("*/outputs/scores/parallel_run_step.txt")
    rows = sorted(line.split() for line in result.read_text().splitlines())
    assert rows == [["3.8", "3.8.18", f"{i}.png"] for i in range(4)]
