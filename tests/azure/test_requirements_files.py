"""Pip requirements files in Azure's environments: ``task.environment.requirements`` and a
conda file's ``pip: [-r requirements.txt]``. Azure's SDK packages in them are left out
with a note, as from a conda file; ``-r`` files are read in at submission, so the nodes
build what was submitted (real files, real ``prsd run`` processes, real uv builds)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from prsd.envs.reqfiles import include_of, inline_conda, inline_requirements
from prsd.envs.spec import EnvError, parse_requirements
from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

SCRIPT = """
    import sys

    def run(mini_batch):
        return ["%d.%d %s" % (sys.version_info[0], sys.version_info[1], p) for p in mini_batch]
"""

YAML = """
    name: reqs
    input_data: ./data
    mini_batch_size: "2"
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
      environment: {environment}
"""

CONDA = """\
name: project_environment
dependencies:
  - python=3.11
  - pip:
      - -r requirements.txt
"""

REQS = "# Azure's SDK, then the job's own\nazureml-defaults==1.38.0\n-r more/extra.txt\n"
MORE = "azureml-dataset-runtime[fuse,pandas]  # pulls fusepy\n\n"


def _job(tmp_path: Path, environment: str) -> Path:
    job = make_job(tmp_path, SCRIPT, YAML.format(environment=environment), files=3)
    (job / "requirements.txt").write_text(REQS, encoding="utf-8")
    (job / "more").mkdir()
    (job / "more" / "extra.txt").write_text(MORE, encoding="utf-8")
    return job


def _node(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PRSD_ENV_CACHE", str(tmp_path / "envcache"))
    monkeypatch.setenv("PRSD_ENV_PYTHONS", "/root/.pyenv/versions/3.11.*/bin/python")
    monkeypatch.setenv("PRSD_CONDA", "none")
    monkeypatch.setenv("PRSD_CONTAINER_RUNTIME", "none")
    empty = tmp_path / "empty-index"  # nothing is fetched: no registry, no mirror, no links
    empty.mkdir()
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"):
        monkeypatch.setenv(name, f"file://{empty}")
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))


def test_include_lines() -> None:
    assert include_of("-r requirements.txt") == "requirements.txt"
    assert include_of("-rreqs/a.txt") == "reqs/a.txt"
    assert include_of("--requirement=a.txt") == "a.txt"
    assert include_of("--requirement a.txt") == "a.txt"
    assert include_of("-e ./pkg") is None
    assert include_of("numpy") is None


def test_a_text_without_r_is_unchanged(tmp_path: Path) -> None:
    text = "# keep me\ndependencies:\n  - python=3.11\n  - pip: [numpy]\n"
    assert inline_conda(text, tmp_path, "conda.yml") == text
    assert inline_requirements("numpy  # c\n", tmp_path, "r.txt") == "numpy  # c\n"


def test_nested_files_are_read_relative_to_the_file_naming_them(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text(REQS, encoding="utf-8")
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "extra.txt").write_text(MORE + "-r ../last.txt\n", encoding="utf-8")
    (tmp_path / "last.txt").write_text("pandas>=2\n", encoding="utf-8")
    text = inline_conda(CONDA, tmp_path, "conda.yml")
    assert "- azureml-defaults==1.38.0\n" in text
    assert "- azureml-dataset-runtime[fuse,pandas]\n" in text
    assert text.rstrip().endswith("- pandas>=2")
    spec = parse_requirements(inline_requirements("-r requirements.txt\n", tmp_path, "r.txt"))
    assert spec.pip == ("pandas>=2",)
    assert spec.left_out == ("azureml-defaults==1.38.0", "azureml-dataset-runtime[fuse,pandas]")


@pytest.mark.parametrize(
    ("files", "said"),
    [
        ({}, "conda.yml: -r requirements.txt: cannot read {d}/requirements.txt: No such file"),
        ({"requirements.txt": "-r requirements.txt\n"}, "includes itself"),
        ({"requirements.txt": "-r ../outside.txt\n"}, "is outside the job folder ({d})"),
    ],
    ids=["missing", "loop", "outside"],
)
def test_bad_includes_are_named(tmp_path: Path, files: dict[str, str], said: str) -> None:
    folder = tmp_path / "job"
    folder.mkdir()
    (tmp_path / "outside.txt").write_text("numpy\n", encoding="utf-8")
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    with pytest.raises(EnvError) as caught:
        inline_conda(CONDA, folder, "conda.yml", inside=folder)
    assert said.format(d=folder) in str(caught.value)


def test_conda_files_r_is_read_in_at_submission_and_azure_packages_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = _job(tmp_path, "{conda_file: ./conda.yml}")
    (job / "conda.yml").write_text(CONDA, encoding="utf-8")
    _node(monkeypatch, tmp_path)
    done = run_prsd(job, tmp_path / "spool")
    assert done.returncode == 0, done.stdout + done.stderr
    note = (
        "task.environment.conda_file ./conda.yml: azureml-defaults==1.38.0, "
        "azureml-dataset-runtime[fuse,pandas] left out: Azure's SDK packages are not installed"
    )
    assert note in done.stderr, done.stderr
    built = json.loads((done.job / "spec.json").read_text())["build_environment"]
    assert "requirements.txt" not in built["conda_file"]  # the nodes never read the files
    assert "azureml-dataset-runtime[fuse,pandas]" in built["conda_file"]
    lines = done.output("out.txt").read_text().splitlines()
    assert sorted(ln.split()[0] for ln in lines) == ["3.11"] * 3, lines


def test_a_requirements_file_leaves_azure_packages_out_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = _job(tmp_path, "{requirements: ./requirements.txt}")
    _node(monkeypatch, tmp_path)
    done = run_prsd(job, tmp_path / "spool")
    assert done.returncode == 0, done.stdout + done.stderr
    note = (
        "task.environment.requirements ./requirements.txt: azureml-defaults==1.38.0, "
        "azureml-dataset-runtime[fuse,pandas] left out"
    )
    assert note in done.stderr, done.stderr
    assert len(done.output("out.txt").read_text().splitlines()) == 3


def test_a_missing_r_file_is_refused_at_submission(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = _job(tmp_path, "{conda_file: ./conda.yml}")
    (job / "conda.yml").write_text(CONDA, encoding="utf-8")
    (job / "more" / "extra.txt").unlink()
    _node(monkeypatch, tmp_path)
    done = run_prsd(job, tmp_path / "spool")
    assert done.returncode == 2, done.stdout + done.stderr
    assert not done.stdout
    said = (
        f"{job / 'job.yaml'}:9: task.environment.conda_file: "
        f"{job / 'requirements.txt'}: -r more/extra.txt: cannot read {job / 'more' / 'extra.txt'}"
    )
    assert said in done.stderr, done.stderr


def test_pins_of_left_out_azure_packages_are_kept_as_constraints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``azureml-dataset-runtime[pandas]`` holds pandas below 2 on Azure; left out, its pin
    stays: uv picks pandas 1.9 of 1.9 and 2.1 (local source packages named pandas)."""
    from tests.srcpkg import make_sdist

    links = tmp_path / "links"
    make_sdist(links, "pandas", "1.9")
    make_sdist(links, "pandas", "2.1")
    script = """
        from importlib.metadata import version

        def run(mini_batch):
            return ["pandas-%s %s" % (version("pandas"), p) for p in mini_batch]
    """
    conda = (
        "dependencies:\n  - python=3.11\n  - pip:\n"
        "      - azureml-dataset-runtime[pandas,fuse]\n      - pandas\n"
    )
    job = make_job(tmp_path, script, YAML.format(environment="{conda_file: ./conda.yml}"), files=2)
    (job / "conda.yml").write_text(conda, encoding="utf-8")
    _node(monkeypatch, tmp_path)
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    done = run_prsd(job, tmp_path / "spool")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "azureml-dataset-runtime[pandas,fuse] left out: Azure's SDK packages are not installed "
        "(workers import prsd's own azureml.core); the pins they hold others to are kept: "
        "pandas<2.0.0, numpy<2.0.0"
    ) in done.stderr, done.stderr
    got = {ln.split()[0] for ln in done.output("out.txt").read_text().splitlines()}
    assert got == {"pandas-1.9"}, got
    build = (done.logs / "sys" / "environment").glob("*.txt")
    assert any("kept as constraints" in p.read_text() for p in build)
