"""``-r requirements.txt`` in a pipeline command step's conda file, as Azure's CLI
pipelines write it: the files it names (nested ``-r`` too, relative to the file naming
them) travel with the step beside its copy of the conda file, and are refused when they
lie outside the pipeline's folder (real ``prsd run`` and ``prsctl submit``, a real uv
build of a real source distribution, no network)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.jobkit import prsctl
from tests.pipekit import run_pipeline, spool_entries
from tests.srcpkg import make_sdist

FIXTURES = Path(__file__).resolve().parent.parent / "pipelines"

CONDA = """\
name: prep-env
channels:
  - conda-forge
dependencies:
  - python=3.11
  - pip
  - pip:
      - -r {req}
"""

PREP = """\
import argparse
import os

import prsd_srconly_demo

parser = argparse.ArgumentParser()
parser.add_argument("--out")
args, _ = parser.parse_known_args()
os.makedirs(args.out, exist_ok=True)
for i in range(4):
    with open(os.path.join(args.out, f"{i}.txt"), "w") as f:
        f.write(f"{i}\\n")
print("prepared 4 files with prsd_srconly_demo", prsd_srconly_demo.BUILT_ON)
"""


def _fixture(tmp_path: Path, req: str) -> Path:
    folder = tmp_path / "cbp"
    shutil.copytree(FIXTURES / "conda_by_path", folder)
    (folder / "prep" / "conda.yml").write_text(CONDA.format(req=req), encoding="utf-8")
    return folder


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The node: packages from a local folder of sdists, an empty index, no conda."""
    sdists = tmp_path / "sdists"
    make_sdist(sdists, "prsd-srconly-demo")
    index = tmp_path / "empty-index"
    index.mkdir()
    cache = tmp_path / "envcache"
    cache.mkdir(mode=0o755)
    for key, value in {
        "PRSD_ENV_CACHE": str(cache),
        "PRSD_CONTAINER_RUNTIME": "none",
        "PRSD_CONDA": "none",
        "PIP_INDEX_URL": f"file://{index}",
        "PIP_FIND_LINKS": str(sdists),
    }.items():
        monkeypatch.setenv(key, value)


def test_nested_r_files_travel_with_the_step_and_are_built(tmp_path: Path, offline: None) -> None:
    """prep/conda.yml -> -r requirements.txt -> -r ../common/base.txt (the package)."""
    folder = _fixture(tmp_path, "requirements.txt")
    (folder / "prep" / "requirements.txt").write_text(
        "# the step's packages\n-r ../common/base.txt\n", encoding="utf-8"
    )
    (folder / "common").mkdir()
    (folder / "common" / "base.txt").write_text("prsd-srconly-demo==0.1\n", encoding="utf-8")
    (folder / "prep" / "prep.py").write_text(PREP, encoding="utf-8")
    r = run_pipeline(folder / "pipeline.yml", tmp_path / "spool", timeout_s=280)
    assert r.returncode == 0, r.stdout + r.stderr
    prep = r.step_job("prep")
    env = prep / "environment"
    # Laid out as around the user's file: the ../common file needs the pipeline's level.
    assert (env / "prep" / "conda.yml").read_text() == (folder / "prep" / "conda.yml").read_text()
    assert (env / "prep" / "requirements.txt").is_file()
    assert (env / "common" / "base.txt").read_text() == "prsd-srconly-demo==0.1\n"
    spec = json.loads((prep / "spec.json").read_text())
    assert "prsd-srconly-demo==0.1" in spec["build_environment"]["conda_file"]
    assert "-r " not in spec["build_environment"]["conda_file"]
    said = (prep / "logs" / "user" / "std_log.txt").read_text()
    assert "prepared 4 files with prsd_srconly_demo 3.11." in said, said
    assert r.final()["state"] == "Completed"


def test_an_r_file_beside_the_conda_file_keeps_the_plain_layout(tmp_path: Path) -> None:
    """Azure's usual shape: conda.yml and requirements.txt side by side, copied at submit
    (a later edit of the user's file changes nothing queued)."""
    folder = _fixture(tmp_path, "requirements.txt")
    (folder / "prep" / "requirements.txt").write_text("pyfiglet==1.0.4\n", encoding="utf-8")
    spool = tmp_path / "spool"
    submitted = prsctl(spool, "submit", str(folder / "pipeline.yml"))
    assert submitted.returncode == 0, submitted.stderr
    pid = submitted.stdout.strip().splitlines()[0].split()[-1]
    (folder / "prep" / "requirements.txt").write_text("numpy\n", encoding="utf-8")
    env = spool / "pipelines" / pid / "steps" / "prep" / "environment"
    assert sorted(p.name for p in env.iterdir()) == ["conda.yml", "requirements.txt"]
    assert (env / "requirements.txt").read_text() == "pyfiglet==1.0.4\n"


def test_an_r_file_outside_the_pipeline_folder_is_refused_at_the_key(tmp_path: Path) -> None:
    folder = _fixture(tmp_path, "../../outside.txt")
    (tmp_path / "outside.txt").write_text("pyfiglet==1.0.4\n", encoding="utf-8")
    r = run_pipeline(folder / "pipeline.yml", tmp_path / "spool")
    assert r.returncode == 2, r.stdout + r.stderr
    assert not r.stdout
    assert r.stderr.strip() == (
        f"daemon.py: error: {folder / 'pipeline.yml'}:15: jobs.prep.environment.conda_file: "
        f"{folder / 'prep' / 'conda.yml'}: -r ../../outside.txt: {tmp_path / 'outside.txt'} "
        f"is outside the pipeline's folder ({folder})"
    ), r.stderr
    assert not any(spool_entries(tmp_path / "spool").values())


def test_a_missing_r_file_is_named_at_the_key(tmp_path: Path) -> None:
    folder = _fixture(tmp_path, "requirements.txt")
    r = run_pipeline(folder / "pipeline.yml", tmp_path / "spool")
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{folder / 'pipeline.yml'}:15: jobs.prep.environment.conda_file: " in r.stderr
    assert f"-r requirements.txt: cannot read {folder / 'prep' / 'requirements.txt'}" in r.stderr
    assert not any(spool_entries(tmp_path / "spool").values())
