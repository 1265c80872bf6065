"""``prsd run pipeline.yml`` is the node that builds every step: a step's python pin that no
interpreter of this node meets is refused at submission, as for a job, before any id is
printed and before anything is written to the spool (real ``prsd run`` processes, the
node's real pyenv interpreters)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from tests.jobkit import prsctl
from tests.pipekit import run_pipeline, spool_entries

if TYPE_CHECKING:
    import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "pipelines"
PYENV = "/root/.pyenv/versions"
OLD_PIN = "name: prep-env\ndependencies:\n  - python=3.4\n  - pip\n"


def _fixture(tmp_path: Path, step_conda: str) -> Path:
    """Azure's CLI pipeline shape (conda files by path); ``step_conda`` pins python=3.4."""
    folder = tmp_path / "cbp"
    shutil.copytree(FIXTURES / "conda_by_path", folder)
    (folder / step_conda).write_text(OLD_PIN, encoding="utf-8")
    return folder


def _node(monkeypatch: pytest.MonkeyPatch) -> None:
    """The node's settings, read by the ``prsd run`` child: its pyenv interpreters, no conda."""
    monkeypatch.setenv("PRSD_ENV_PYTHONS", f"{PYENV}/*/bin/python")
    monkeypatch.setenv("PRSD_CONDA", "none")


def test_a_command_steps_unmet_pin_is_refused_before_any_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not shutil.which("python3.4")
    folder = _fixture(tmp_path, "prep/conda.yml")
    spool = tmp_path / "spool"
    _node(monkeypatch)
    r = run_pipeline(folder / "pipeline.yml", spool)
    assert r.returncode == 2, r.stdout + r.stderr
    assert not r.stdout  # no "pipeline <id>", no step ids
    said = (
        f"{folder / 'pipeline.yml'}:15: jobs.prep.environment.conda_file: "
        "no interpreter for python=3.4 on this node"
    )
    assert said in r.stderr, r.stderr
    assert "3.8.18" in r.stderr  # the interpreters found are named
    assert not any(spool_entries(spool).values()), spool_entries(spool)


def test_a_parallel_steps_unmet_pin_is_refused_before_any_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _fixture(tmp_path, "score/conda.yml")
    spool = tmp_path / "spool"
    _node(monkeypatch)
    r = run_pipeline(folder / "pipeline.yml", spool)
    assert r.returncode == 2, r.stdout + r.stderr
    assert not r.stdout
    said = (
        f"{folder / 'pipeline.yml'}:43: jobs.score.task.environment.conda_file: "
        "no interpreter for python=3.4 on this node"
    )
    assert said in r.stderr, r.stderr
    assert not any(spool_entries(spool).values()), spool_entries(spool)


def test_prsctl_submit_leaves_the_pin_to_the_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fleet's nodes, not the submitting machine, have the interpreters: no check there."""
    folder = _fixture(tmp_path, "prep/conda.yml")
    _node(monkeypatch)
    submitted = prsctl(tmp_path / "spool", "submit", str(folder / "pipeline.yml"))
    assert submitted.returncode == 0, submitted.stderr
    pid = submitted.stdout.split()[0]
    assert (tmp_path / "spool" / "pipelines" / pid / "pipeline.json").is_file(), submitted.stdout
