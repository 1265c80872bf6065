"""Helpers for the job spec tests: job folders in tmp_path, and error assertions."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from prsd.errors import JobSpecError
from prsd.jobspec import JobSpec, load_job_spec

AZURE = Path(__file__).parent / "azure"
SCRIPT = "def init():\n    pass\n\n\ndef run(mini_batch):\n    return mini_batch\n"
MINIMAL = """\
input_data: ./data
task:
  entry_script: score.py
"""


def make_job(
    root: Path,
    text: str = MINIMAL,
    *,
    files: tuple[str, ...] = ("score.py",),
    dirs: tuple[str, ...] = ("data",),
    name: str = "job.yaml",
) -> Path:
    """A job folder at ``root`` holding ``text`` as its job file, scripts and folders."""
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
    for relative in files:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(SCRIPT, encoding="utf-8")
    for relative in dirs:
        (root / relative).mkdir(parents=True, exist_ok=True)
    return root


def load(root: Path, *, spool: Path | None = None, roots: tuple[Path, ...] = ()) -> JobSpec:
    """``load_job_spec`` of ``root``."""
    return load_job_spec(root, spool_job_dir=spool, allowed_roots=roots)


def load_error(
    root: Path, *, spool: Path | None = None, roots: tuple[Path, ...] = ()
) -> JobSpecError:
    """The JobSpecError that loading ``root`` raises."""
    with pytest.raises(JobSpecError) as info:
        load(root, spool=spool, roots=roots)
    return info.value


def line_of(path: Path, needle: str) -> int:
    """The 1-based line of ``path`` where ``needle`` first appears."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def assert_error(
    err: JobSpecError, key: str, path: Path, needle: str | None, *fragments: str
) -> None:
    """``err`` names ``key``, the file and the line holding ``needle``, and each fragment."""
    assert err.key == key, str(err)
    where = f"{path}:{line_of(path, needle)}" if needle is not None else str(path)
    assert err.location == where, str(err)
    for fragment in fragments:
        assert fragment in err.problem, str(err)
    assert "\n" not in str(err)


def azure_copy(root: Path, name: str) -> Path:
    """A job folder holding a copy of one of Azure's YAML files as ``job.yaml``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "job.yaml").write_bytes((AZURE / name).read_bytes())
    return root


IRIS_CONDA = """\
name: prs-env
channels:
  - conda-forge
dependencies:
  - python=3.8
  - pip
  - pip:
      - mlflow
      - azureml-mlflow
      - pandas
      - scikit-learn
"""


def iris_folders(root: Path) -> None:
    """The folders Azure's iris samples refer to, with the sample's MLTable."""
    table = root / "neural-iris-mltable"
    table.mkdir(parents=True)
    (table / "MLTable").write_bytes((AZURE / "neural_iris_MLTable").read_bytes())
    (table / "iris.csv").write_text("sepal_length,species\n5.1,setosa\n", encoding="utf-8")
    (root / "iris-model").mkdir()
    (root / "environment").mkdir()
    (root / "environment" / "environment_parallel.yml").write_text(IRIS_CONDA, encoding="utf-8")
    (root / "script").mkdir()
    (root / "script" / "iris_prediction.py").write_text(SCRIPT, encoding="utf-8")
