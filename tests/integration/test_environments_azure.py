"""Azure's conda files as published: old Python pins, packages without wheels, Azure's SDK
packages, and builds shown while they run. Real interpreters (CPython 3.7 and 3.8 under
pyenv), real uv builds of real source distributions, no network: the packages come
from a local ``--find-links`` folder and an empty local index.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import pytest

from tests.jobkit import make_job, run_prsd
from tests.srcpkg import make_sdist

if TYPE_CHECKING:
    from pathlib import Path

PYENV = "/root/.pyenv/versions"
PY37 = f"{PYENV}/3.7.16/bin/python"
PY38 = f"{PYENV}/3.8.18/bin/python"

SCRIPT = """
    import sys

    def init():
        global VERSION
        VERSION = "%d.%d" % sys.version_info[:2]

    def run(mini_batch):
        import importlib
        try:
            extra = importlib.import_module("prsd_srconly_demo")
            built = "uid%d-on%s" % (extra.BUILT_BY_UID, extra.BUILT_ON)
        except ImportError:
            built = "-"
        return ["%s %s %s" % (VERSION, built, p.split("/")[-1]) for p in mini_batch]
"""

YAML = """
    name: {name}
    input_data: ./data
    mini_batch_size: "2"
    resources: {{max_concurrency_per_instance: 1}}
    retry_settings: {{max_retries: 0, timeout: 60}}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
      environment: {environment}
"""

# The shape of Azure's published conda files (azureml-examples, MachineLearningNotebooks):
# an old python pin, pip pinned, Azure's SDK packages, and a package with no wheel.
AZURE_CONDA = """\
name: project_environment
channels:
  - conda-forge
dependencies:
  - python={python}
  - pip=20.2.4
  - pip:
      - azureml-defaults==1.38.0
      - azureml-dataset-runtime[fuse,pandas]
      - {package}
"""


@pytest.fixture(scope="module")
def sdists(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The local package folder: source distributions only (no wheel of any of them)."""
    folder = tmp_path_factory.mktemp("sdists")
    make_sdist(folder, "prsd-srconly-demo", sleep_s=3.0)
    make_sdist(folder, "prsd-slow-demo", sleep_s=7.0)  # past prsd run's 5 s pipeline lines
    make_sdist(
        folder,
        "prsd-broken-demo",
        fail="prsd-broken-demo needs the libfoo headers (apt install libfoo-dev)",
    )
    return folder


@pytest.fixture(scope="module")
def offline(sdists: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The agent's settings: the node's pyenv interpreters listed by a pattern, packages from
    the local folder, an empty local index in place of PyPI, a cache of this module's own."""
    index = tmp_path_factory.mktemp("empty-index")
    return {
        "PRSD_ENV_CACHE": str(tmp_path_factory.mktemp("envcache")),
        "PRSD_ENV_PYTHONS": f"{PYENV}/*/bin/python",
        "PRSD_CONTAINER_RUNTIME": "none",
        "PRSD_CONDA": "none",
        "PIP_INDEX_URL": f"file://{index}",
        "PIP_FIND_LINKS": str(sdists),
    }


def azure_job(root: Path, name: str, conda: str, files: int = 4) -> Path:
    job = make_job(root, SCRIPT, YAML.format(name=name, environment="{conda_file: ./conda.yml}"))
    (job / "conda.yml").write_text(conda, encoding="utf-8")
    data = job / "data"
    data.mkdir()
    for i in range(files):
        (data / f"img{i}.txt").write_text(f"{i}\n", encoding="utf-8")
    return job


def rows(out: Path) -> list[list[str]]:
    return sorted(line.split() for line in out.read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize("python", [PY37, PY38], ids=["3.7", "3.8"])
def test_workers_run_on_a_python_37_or_38_venv(tmp_path: Path, python: str) -> None:
    """A job whose task.environment.python is a venv of CPython 3.7 / 3.8 runs there."""
    assert os.access(python, os.X_OK), f"{python} is needed (pyenv install)"
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    environment = f"{{python: {venv / 'bin' / 'python'}}}"
    job = make_job(tmp_path, SCRIPT, YAML.format(name="oldpy", environment=environment), files=5)
    done = run_prsd(job, tmp_path / "spool")
    assert done.returncode == 0, done.stdout + done.stderr
    version = python.split("/")[-3].rsplit(".", 1)[0]
    got = rows(done.output("out.txt"))
    assert [r[0] for r in got] == [version] * 5, got
    assert [r[2] for r in got] == [f"item{i:05d}.txt" for i in range(5)]


@pytest.mark.parametrize(("pin", "full"), [("3.7", "3.7.16"), ("3.8", "3.8.18")])
def test_azure_conda_file_pinning_an_old_python_builds_a_source_package_on_it(
    tmp_path: Path, offline: dict[str, str], pin: str, full: str
) -> None:
    """python=3.8 (3.7) gets the node's 3.8 (3.7), listed by a glob; azureml-* are left out
    with a note; a package with no wheel is built from source; prsd run shows the build's
    phase."""
    conda = AZURE_CONDA.format(python=pin, package="prsd-srconly-demo==0.1")
    job = azure_job(tmp_path, "mnist", conda)
    # A cache of its own: uv would reuse the wheel another pin's build made (py3-none-any).
    env = {**offline, "PRSD_ENV_CACHE": str(tmp_path / "envcache")}
    done = run_prsd(job, tmp_path / "spool", "--node-id", "n1", env=env, timeout_s=280)
    build = "".join(
        p.read_text(encoding="utf-8") for p in (done.logs / "sys" / "environment").glob("*.txt")
    )
    assert done.returncode == 0, done.stdout + done.stderr + build
    assert {tuple(r[:2]) for r in rows(done.output("out.txt"))} == {(pin, f"uid0-on{full}")}
    assert f"interpreter: /root/.pyenv/versions/{full}/bin/python{pin} ({full})" in build
    left = "azureml-defaults==1.38.0, azureml-dataset-runtime[fuse,pandas] left out"
    said = f"prsd: note: environment: task.environment.conda_file ./conda.yml: {left}: Azure's SDK"
    assert said in done.stderr, done.stderr
    assert left in build and "azureml-defaults" not in build.split(left)[1]
    phases = [ln for ln in done.stdout.splitlines() if "building environment: " in ln]
    shown = " | ".join(phases)
    assert "building environment: building prsd-srconly-demo==0.1 from source (0:00:" in shown, (
        done.stdout
    )
    assert phases[0].startswith("Running: 0 of 2 mini-batches"), done.stdout


def test_failed_source_build_names_the_package_and_the_reason(
    tmp_path: Path, offline: dict[str, str]
) -> None:
    """The reason is the build's own error, not uv's first line, with the build log."""
    conda = AZURE_CONDA.format(python="3.11", package="prsd-broken-demo==0.1")
    job = azure_job(tmp_path, "broken", conda)
    env = {**offline, "COLUMNS": "60"}  # a narrow terminal: uv would wrap the reason
    done = run_prsd(job, tmp_path / "spool", "--node-id", "n1", env=env)
    assert done.returncode != 0
    reason = next(ln for ln in done.stdout.splitlines() if ln.startswith("Reason: "))
    assert reason.startswith(
        "Reason: error: Failed to build `prsd-broken-demo==0.1`: RuntimeError: "
        "prsd-broken-demo needs the libfoo headers (apt install libfoo-dev) "
        "(building the job's environment on node n1; see "
    ), reason
    assert reason.rstrip(")").endswith("logs/sys/environment/n1.txt"), reason


def test_source_builds_forbidden_by_the_node(tmp_path: Path, offline: dict[str, str]) -> None:
    """PRSD_ENV_SOURCE_BUILDS=no: wheels only, and the reason says the node forbids builds."""
    conda = AZURE_CONDA.format(python="3.11", package="prsd-srconly-demo==0.1")
    job = azure_job(tmp_path, "nosrc", conda)
    env = {**offline, "PRSD_ENV_SOURCE_BUILDS": "no"}
    done = run_prsd(job, tmp_path / "spool", "--node-id", "n1", env=env)
    assert done.returncode != 0
    reason = next(ln for ln in done.stdout.splitlines() if ln.startswith("Reason: "))
    assert "Because prsd-srconly-demo==0.1 has no usable wheels" in reason, reason
    assert "(PRSD_ENV_SOURCE_BUILDS=no on this node)" in reason, reason


def test_a_pin_no_interpreter_meets_is_refused_at_submit(
    tmp_path: Path, offline: dict[str, str]
) -> None:
    """prsd run is the node: python=3.5 is refused before any job or build exists."""
    assert not shutil.which("python3.5")
    conda = AZURE_CONDA.format(python="3.5", package="prsd-srconly-demo==0.1")
    job = azure_job(tmp_path, "nopin", conda)
    done = run_prsd(job, tmp_path / "spool", env=offline)
    assert done.returncode == 2, done.stdout + done.stderr
    assert not done.stdout
    said = f"{job / 'job.yaml'}: task.environment.conda_file: no interpreter for python=3.5 on"
    assert said in done.stderr, done.stderr
    assert "/root/.pyenv/versions/3.8.18/bin/python3.8 (3.8.18)" in done.stderr
    assert not list((tmp_path / "spool" / "jobs").glob("*"))


def test_a_patch_level_pin_is_built_on_the_nodes_python_of_that_minor(
    tmp_path: Path, offline: dict[str, str]
) -> None:
    """python=3.8.5, as Azure's files pin it, on a node with 3.8.18 and no warn setting:
    built on 3.8.18, said at submission (both versions), in the job's notes, the build
    log and the job's main log."""
    assert not os.path.exists(f"{PYENV}/3.8.5")
    conda = AZURE_CONDA.format(python="3.8.5", package="prsd-srconly-demo==0.1")
    job = azure_job(tmp_path, "patch", conda)
    env = {**offline, "PRSD_ENV_CACHE": str(tmp_path / "envcache")}
    env["PRSD_PYTHON_MISMATCH"] = "error"
    done = run_prsd(job, tmp_path / "spool", "--node-id", "n1", env=env, timeout_s=280)
    build = "".join(
        p.read_text(encoding="utf-8") for p in (done.logs / "sys" / "environment").glob("*.txt")
    )
    assert done.returncode == 0, done.stdout + done.stderr + build
    assert {tuple(r[:2]) for r in rows(done.output("out.txt"))} == {("3.8", "uid0-on3.8.18")}
    both = (
        "python=3.8.5 pinned and this node has no 3.8.5: using 3.8.18, the same 3.8 at "
        f"another patch level ({PYENV}/3.8.18/bin/python3.8)"
    )
    said = f"prsd: note: environment: {job / 'job.yaml'}: task.environment.conda_file: {both}"
    assert said in done.stderr, done.stderr
    assert f"interpreter: {PYENV}/3.8.18/bin/python3.8 (3.8.18) ({both})" in build
    assert both in done.main_logs()
    rule = "python=3.8.5 names a patch level; a node without it builds on its newest Python 3.8"
    assert rule in (done.logs / "sys" / "job_notes.txt").read_text(encoding="utf-8")
    assert rule in done.stderr


def test_a_patch_level_pin_of_a_minor_the_node_lacks_stays_refused(
    tmp_path: Path, offline: dict[str, str]
) -> None:
    """python=3.5.4: no 3.5 here, so refused at submission as before."""
    conda = AZURE_CONDA.format(python="3.5.4", package="prsd-srconly-demo==0.1")
    job = azure_job(tmp_path, "nominor", conda)
    done = run_prsd(job, tmp_path / "spool", env=offline)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no interpreter for python=3.5.4 on this node" in done.stderr, done.stderr
    assert not list((tmp_path / "spool" / "jobs").glob("*"))


PIPELINE = """
    type: pipeline
    jobs:
      score:
        type: parallel
        inputs:
          imgs: {type: uri_folder, path: ./imgs}
        input_data: ${{inputs.imgs}}
        mini_batch_size: "2"
        task:
          type: run_function
          code: ./src
          entry_script: score.py
          environment:
            conda_file:
              dependencies: [python=3.8, {pip: [azureml-defaults, prsd-slow-demo==0.1]}]
"""


def test_prsd_run_of_a_pipeline_shows_its_steps_build(
    tmp_path: Path, offline: dict[str, str]
) -> None:
    """A pipeline's progress line names the step's build and its phase."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "score.py").write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    (tmp_path / "imgs").mkdir()
    for i in range(2):
        (tmp_path / "imgs" / f"{i}.png").write_bytes(b"x")
    (tmp_path / "pipeline.yml").write_text(textwrap.dedent(PIPELINE), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "prsd.daemon", "run", str(tmp_path / "pipeline.yml"),
         "--spool", str(tmp_path / "spool")],
        capture_output=True, text=True, timeout=280, env={**os.environ, **offline}, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    shown = [ln for ln in done.stdout.splitlines() if "; building environment: " in ln]
    assert any(
        ln.startswith("pipeline ")
        and "score Running (" in ln
        and "; building environment: building prsd-slow-demo==0.1 from source (0:00:0" in ln
        for ln in shown
    ), done.stdout


TABLE = """
    import sys
    import pandas as pd

    def run(mini_batch, mini_batch_context):
        assert isinstance(mini_batch, pd.DataFrame), type(mini_batch)
        version = "%d.%d" % sys.version_info[:2]
        return ["%s %s %d" % (version, pd.__version__, v) for v in mini_batch["value"]]
"""


@pytest.fixture(scope="module")
def venv38_pandas(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A CPython 3.8 venv with the last pandas and pyarrow for 3.8, from the node's indexes."""
    from prsd.envs.build import uv_binary
    from prsd.envs.commands import pip_config_files, pip_index_env

    venv = tmp_path_factory.mktemp("venv38") / "v"
    uv = uv_binary()
    env = dict(os.environ)
    configs = [p.read_text() for p in pip_config_files(env) if p.is_file()]
    env.update(pip_index_env(env, configs))
    subprocess.run([uv, "venv", "-q", "--python", PY38, str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    packages = ["pandas==2.0.3", "pyarrow==17.0.0"]
    done = subprocess.run(
        [uv, "pip", "install", "-q", "--python", python, *packages],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"pandas and pyarrow for 3.8 are needed: {done.stderr}"
    return python


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_table_job_runs_on_a_python_38_venv_with_pandas(
    tmp_path: Path, venv38_pandas: str, fmt: str
) -> None:
    """A folder of .csv / .parquet files split by size: DataFrames in workers on 3.8."""
    import pandas as pd

    yaml = YAML.format(name="table38", environment=f"{{python: {venv38_pandas}}}")
    yaml = yaml.replace('mini_batch_size: "2"', "mini_batch_size: 16KB")
    job = make_job(tmp_path, TABLE, yaml)
    data = job / "data"
    data.mkdir()
    frame = pd.DataFrame({"store": [f"s{i % 3}" for i in range(6000)], "value": range(6000)})
    for i, part in enumerate((frame.iloc[:3000], frame.iloc[3000:])):
        if fmt == "csv":
            part.to_csv(data / f"part-{i}.csv", index=False)
        else:
            part.to_parquet(data / f"part-{i}.parquet", index=False)
    done = run_prsd(job, tmp_path / "spool")
    assert done.returncode == 0, done.stdout + done.stderr
    got = [line.split() for line in done.output("out.txt").read_text().splitlines()]
    assert {(r[0], r[1]) for r in got} == {("3.8", "2.0.3")}
    assert sorted(int(r[2]) for r in got) == list(range(6000))
