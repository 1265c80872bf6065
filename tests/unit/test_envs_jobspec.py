"""task.environment at intake: what is recorded to build, what is ignored, what is refused."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pytest

from tests.unit.jobspec_cases import load, load_error, make_job

if TYPE_CHECKING:
    from pathlib import Path

CONDA = "name: x\ndependencies:\n  - python=3.11\n  - pip:\n    - pyfiglet==1.0.4\n"


def _job(tmp_path: Path, environment: str, **files: str) -> Path:
    root = make_job(
        tmp_path,
        f"input_data: ./data\ntask:\n  entry_script: score.py\n  environment: {environment}\n",
    )
    for name, text in files.items():
        (root / name.replace("_", ".", 1)).write_text(text)
    return root


def test_conda_file_recorded_whole(tmp_path: Path) -> None:
    spec = load(_job(tmp_path, "{conda_file: ./conda.yml}", conda_yml=CONDA))
    assert spec.build_environment == {"conda_file": CONDA, "source": "./conda.yml"}
    assert spec.python is None and not spec.ignored


def test_requirements_and_inline_conda(tmp_path: Path) -> None:
    spec = load(_job(tmp_path, "{requirements: req.txt, python_mismatch: warn}", req_txt="rich\n"))
    assert spec.build_environment == {
        "requirements": "rich\n",
        "source": "req.txt",
        "python_mismatch": "warn",
    }
    inline = load(_job(tmp_path / "b", "{conda_file: {dependencies: [python=3.11, numpy]}}"))
    assert "numpy" in inline.build_environment["conda_file"]


def test_python_wins_and_the_file_is_ignored(tmp_path: Path) -> None:
    spec = load(_job(tmp_path, f"{{python: {sys.executable}, conda_file: ./conda.yml}}"))
    assert spec.python == sys.executable and spec.build_environment == {}
    assert "task.environment.conda_file" in spec.ignored


@pytest.mark.parametrize(
    ("environment", "files", "key", "fragment"),
    [
        ("{conda_file: ./nope.yml}", {}, "task.environment.conda_file", "is not a file"),
        ("{conda_file: ../conda.yml}", {}, "task.environment.conda_file", "leaves the job folder"),
        (
            "{conda_file: ./conda.yml}",
            {"conda_yml": "dependencies: [python=3.11\n"},
            "task.environment.conda_file",
            "./conda.yml is not valid YAML (line 2)",
        ),
        (
            "{requirements: ./r.txt}",
            {"r_txt": "-e .\n"},
            "task.environment.requirements",
            "line 1: options such as -e are not allowed",
        ),
        (
            "{conda_file: ./conda.yml, requirements: ./r.txt}",
            {"conda_yml": CONDA, "r_txt": "rich\n"},
            "task.environment",
            "names both conda_file and requirements",
        ),
        (
            "{conda_file: ./conda.yml, python_mismatch: sometimes}",
            {"conda_yml": CONDA},
            "task.environment.python_mismatch",
            "expected error or warn",
        ),
    ],
)
def test_refused_at_intake(
    tmp_path: Path, environment: str, files: dict[str, str], key: str, fragment: str
) -> None:
    (tmp_path / "conda.yml").write_text(CONDA)  # outside the job folder
    err = load_error(_job(tmp_path / "job", environment, **files))
    assert err.key == key and fragment in err.problem, str(err)
