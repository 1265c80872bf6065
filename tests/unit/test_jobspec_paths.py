"""Paths in a job spec: resolution, containment, allowed roots, origin.json, code and outputs."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import pytest

from tests.unit.jobspec_cases import SCRIPT, assert_error, load, load_error, make_job

if TYPE_CHECKING:
    from pathlib import Path

ENTRY = "task:\n  entry_script: score.py\n"


@pytest.mark.parametrize("text", ["../outside", "./data/../../outside", "data/../../../etc"])
def test_relative_path_leaving_job_folder(tmp_path: Path, text: str) -> None:
    """A relative input path that leaves the job folder is refused."""
    (tmp_path / "outside").mkdir()
    root = make_job(tmp_path / "job", f"input_data: {text}\n" + ENTRY)
    assert_error(
        load_error(root), "input_data", root / "job.yaml", "input_data", "leaves the job folder"
    )


def test_symlink_leading_outside(tmp_path: Path) -> None:
    """A relative path through a symlink that resolves outside the job folder is refused."""
    (tmp_path / "outside").mkdir()
    root = make_job(tmp_path / "job", "input_data: ./link\n" + ENTRY)
    (root / "link").symlink_to(tmp_path / "outside")
    assert_error(
        load_error(root), "input_data", root / "job.yaml", "input_data", "symlink", "outside"
    )


def test_symlink_inside_is_kept(tmp_path: Path) -> None:
    """A symlink that stays inside the job folder is accepted; the path is not resolved."""
    root = make_job(tmp_path / "job", "input_data: ./link\n" + ENTRY)
    (root / "link").symlink_to(root / "data")
    assert load(root).input.paths == (str(root / "link"),)


def test_absolute_path_without_roots(tmp_path: Path) -> None:
    """With no allowed roots, any absolute path is accepted."""
    data = tmp_path / "datasets" / "images"
    data.mkdir(parents=True)
    root = make_job(tmp_path / "job", f"input_data: {data}\n" + ENTRY)
    assert load(root).input.paths == (str(data),)


def test_absolute_path_under_allowed_root(tmp_path: Path) -> None:
    """An absolute path under an allowed root is accepted."""
    data = tmp_path / "datasets" / "images"
    data.mkdir(parents=True)
    root = make_job(tmp_path / "job", f"input_data: {data}/\n" + ENTRY)
    assert load(root, roots=(tmp_path / "datasets",)).input.paths == (str(data),)


@pytest.mark.parametrize("via_link", [False, True])
def test_absolute_path_outside_allowed_roots(tmp_path: Path, via_link: bool) -> None:
    """An absolute path outside the allowed roots (or linked out of them) is refused."""
    secret = tmp_path / "secret"
    secret.mkdir()
    allowed = tmp_path / "datasets"
    allowed.mkdir()
    target = secret
    if via_link:
        target = allowed / "link"
        target.symlink_to(secret)
    root = make_job(tmp_path / "job", f"input_data: {target}\n" + ENTRY)
    err = load_error(root, roots=(allowed,))
    assert_error(err, "input_data", root / "job.yaml", "input_data", "outside the allowed roots")


def test_missing_input_names_key(tmp_path: Path) -> None:
    """A missing input path is an error naming the key and the path."""
    root = make_job(tmp_path, "input_data: [./data, ./nope]\n" + ENTRY)
    err = load_error(root)
    assert_error(err, "input_data[1]", root / "job.yaml", "input_data", "does not exist", "nope")


def test_input_list_keeps_order(tmp_path: Path) -> None:
    """A list of inputs keeps the order given."""
    root = make_job(tmp_path, "input_data: [./b, ./a]\n" + ENTRY, dirs=("a", "b"))
    assert load(root).input.paths == (str(root / "b"), str(root / "a"))


def test_cloud_input_refused(tmp_path: Path) -> None:
    """A cloud location as input is refused: prsd reads local paths."""
    root = make_job(tmp_path, "input_data: azureml://datastores/x/paths/y\n" + ENTRY)
    assert "cloud location" in load_error(root).problem


def _submitted(tmp_path: Path, text: str) -> tuple[Path, Path]:
    """A user's folder and its submitted copy in the spool, with origin.json."""
    origin = make_job(
        tmp_path / "user" / "digits", text, files=("script/score.py",), dirs=("images", "labels")
    )
    job = tmp_path / "spool" / "jobs" / "j1"
    make_job(job, text, files=("code/score.py",), dirs=())
    (job / "origin.json").write_text(json.dumps({"job_dir": str(origin)}), encoding="utf-8")
    return origin, job


SUBMITTED = """\
input_data: ./images
side_inputs: {labels: ./labels}
task:
  code: ./script
  entry_script: score.py
  program_arguments: --labels ./labels
  append_row_to: ./outputs/out.txt
"""


def test_origin_json(tmp_path: Path) -> None:
    """With origin.json, inputs resolve in the original folder, code in the snapshot, outputs in the spool."""
    origin, job = _submitted(tmp_path, SUBMITTED)
    spec = load(job, spool=job)
    assert spec.name == "digits"
    assert spec.job_dir == str(origin)
    assert spec.input.paths == (str(origin / "images"),)
    assert spec.side_inputs == {"labels": str(origin / "labels")}
    assert spec.code_dir == str(job / "code")
    assert spec.program_arguments == ("--labels", str(origin / "labels"))
    assert spec.append_row_to == str(job / "outputs" / "out.txt")


def test_origin_without_code_uses_snapshot(tmp_path: Path) -> None:
    """Without task.code, a submitted job's code folder is its code/ snapshot."""
    _, job = _submitted(tmp_path, "input_data: ./images\n" + ENTRY)
    assert load(job).code_dir == str(job / "code")


def test_origin_snapshot_missing(tmp_path: Path) -> None:
    """A submitted job without its code/ snapshot is an error."""
    _, job = _submitted(tmp_path, SUBMITTED)
    (job / "code" / "score.py").unlink()
    (job / "code").rmdir()
    err = load_error(job)
    assert_error(err, "task.code", job / "job.yaml", "code:", "code snapshot", "missing")


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("not json", "not JSON"),
        ('{"job_dir": "relative/path"}', "absolute path"),
        ('{"job_dir": "/no/such/folder/anywhere"}', "no longer exists"),
        ("[]", "where an object is expected"),
        ("{}", "absolute path"),
    ],
)
def test_bad_origin_json(tmp_path: Path, content: str, fragment: str) -> None:
    """A malformed origin.json is an error naming the file."""
    _, job = _submitted(tmp_path, SUBMITTED)
    (job / "origin.json").write_text(content, encoding="utf-8")
    err = load_error(job)
    assert err.location == str(job / "origin.json")
    assert fragment in err.problem


def test_origin_outside_allowed_roots(tmp_path: Path) -> None:
    """An origin folder outside the allowed roots is refused (relative paths would escape them)."""
    _, job = _submitted(tmp_path, SUBMITTED)
    allowed = tmp_path / "datasets"
    allowed.mkdir()
    err = load_error(job, roots=(allowed,))
    assert err.key == "job_dir"
    assert "outside the allowed roots" in err.problem


@pytest.mark.parametrize(
    ("entry", "files", "expected"),
    [
        ("score.py", ("score.py",), "score.py"),
        ("./score.py", ("score.py",), "score.py"),
        ("src/score.py", ("src/score.py",), "src/score.py"),
        (
            "batch_score.main",
            ("batch_score/__init__.py", "batch_score/main.py"),
            "batch_score.main",
        ),
        ("scorer", ("scorer/__init__.py",), "scorer"),
        ("score", ("score.py",), "score"),
    ],
)
def test_entry_script_forms(
    tmp_path: Path, entry: str, files: tuple[str, ...], expected: str
) -> None:
    """The entry script is a file in the code folder or a dotted module that resolves there."""
    root = make_job(tmp_path, f"input_data: ./data\ntask:\n  entry_script: {entry}\n", files=files)
    assert load(root).entry_script == expected


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ("missing.py", "is not a file or module"),
        ("pkg.missing", "is not a file or module"),
        ("../score.py", "leaves the code folder"),
        ("/abs/score.py", "relative to the code folder"),
        ("data", "is not a file or module"),
    ],
)
def test_bad_entry_script(tmp_path: Path, entry: str, fragment: str) -> None:
    """An entry script that is missing, absolute or outside the code folder is refused."""
    root = make_job(
        tmp_path / "job",
        f"input_data: ./data\ntask:\n  entry_script: {entry}\n",
        files=("pkg/__init__.py",),
    )
    (tmp_path / "score.py").write_text(SCRIPT, encoding="utf-8")
    err = load_error(root)
    assert_error(err, "task.entry_script", root / "job.yaml", "entry_script", fragment)


@pytest.mark.parametrize(
    ("code", "fragment"),
    [
        ("./nope", "is missing or not a folder"),
        ("../", "leaves the job folder"),
        ("azureml:code:1", "not a local folder"),
    ],
)
def test_bad_code_folder(tmp_path: Path, code: str, fragment: str) -> None:
    """A code folder that is missing, outside the job folder or remote is refused."""
    root = make_job(
        tmp_path / "job", f"input_data: ./data\ntask:\n  code: {code}\n  entry_script: score.py\n"
    )
    assert_error(load_error(root), "task.code", root / "job.yaml", "code:", fragment)


def test_source_directory_alias(tmp_path: Path) -> None:
    """v1 source_directory sets the code folder."""
    root = make_job(
        tmp_path,
        "input_data: ./data\nsource_directory: src\nentry_script: score.py\n",
        files=("src/score.py",),
    )
    assert load(root).code_dir == str(root / "src")


def _python(root: Path, mode: int = 0o755) -> Path:
    python = root / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n", encoding="utf-8")
    python.chmod(mode)
    return python


def test_task_environment_python(tmp_path: Path) -> None:
    """task.environment.python chooses the workers' interpreter."""
    python = _python(tmp_path)
    root = make_job(
        tmp_path / "job",
        f"input_data: ./data\ntask:\n  entry_script: score.py\n  environment: {{python: {python}}}\n",
    )
    assert load(root).python == str(python)


def test_task_environment_relative_venv_symlink(tmp_path: Path) -> None:
    """A venv python inside the job folder may be a symlink to the system interpreter."""
    root = make_job(
        tmp_path,
        "input_data: ./data\ntask:\n  entry_script: score.py\n  environment: {python: .venv/bin/python}\n",
    )
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "python").symlink_to(os.path.realpath("/bin/sh"))
    assert load(root).python == str(root / ".venv" / "bin" / "python")


@pytest.mark.parametrize("executable", [False, True])
def test_task_environment_python_not_usable(tmp_path: Path, executable: bool) -> None:
    """A python that is missing or not executable is refused."""
    python = _python(tmp_path, 0o755 if executable else 0o644)
    path = tmp_path / "nope" if executable else python
    root = make_job(
        tmp_path / "job",
        f"input_data: ./data\ntask:\n  entry_script: score.py\n  environment: {{python: {path}}}\n",
    )
    err = load_error(root)
    assert_error(
        err, "task.environment.python", root / "job.yaml", "environment:", "not an executable file"
    )


@pytest.mark.parametrize(
    ("environment", "ignored", "build", "note"),
    [
        ("azureml:AzureML-sklearn-1.0@latest", None, "registered", None),
        ("{image: mcr.microsoft.com/azureml/openmpi}", None, "image", None),
        ("{name: prs-env, version: 1}", "task.environment.name", None, None),
    ],
)
def test_azure_environment_recorded(
    tmp_path: Path, environment: str, ignored: str | None, build: str | None, note: str | None
) -> None:
    """An Azure environment is accepted: a registered name or image recorded, metadata ignored."""
    root = make_job(
        tmp_path,
        f"input_data: ./data\ntask:\n  entry_script: score.py\n  environment: {environment}\n",
    )
    spec = load(root)
    assert spec.python is None
    assert ignored is None or ignored in spec.ignored
    assert build is None or build in spec.build_environment
    assert note is None or any(note in n for n in spec.notes), spec.notes


def test_environment_unknown_key(tmp_path: Path) -> None:
    """An unknown key in task.environment is an error with a suggestion."""
    root = make_job(
        tmp_path,
        "input_data: ./data\ntask:\n  entry_script: score.py\n  environment: {pyhton: /x}\n",
    )
    assert_error(
        load_error(root),
        "task.environment.pyhton",
        root / "job.yaml",
        "environment:",
        "did you mean 'python'",
    )


@pytest.mark.parametrize(
    ("append", "expected"),
    [
        ("./outputs/results.txt", "outputs/results.txt"),
        ("results.csv", "results.csv"),
        ("file:./out/r.txt", "out/r.txt"),
    ],
)
def test_append_row_to_relative_in_spool(tmp_path: Path, append: str, expected: str) -> None:
    """A relative append_row_to resolves inside the job's spool folder."""
    root = make_job(
        tmp_path / "job",
        f"input_data: ./data\ntask:\n  entry_script: score.py\n  append_row_to: {append}\n",
    )
    spool = tmp_path / "spool" / "jobs" / "j1"
    spec = load(root, spool=spool)
    assert (spec.output_action, spec.append_row_to) == ("append_row", str(spool / expected))


@pytest.mark.parametrize(
    ("append", "fragment"),
    [
        ("../escape.txt", "leaves the job's spool folder"),
        ("./data", "is a folder"),
        ("https://x/y.txt", "cloud location"),
    ],
)
def test_bad_append_row_to(tmp_path: Path, append: str, fragment: str) -> None:
    """append_row_to may not leave the spool folder, name a folder, or be remote."""
    root = make_job(
        tmp_path / "job",
        f"input_data: ./data\ntask:\n  entry_script: score.py\n  append_row_to: {append}\n",
    )
    err = load_error(root)
    assert_error(err, "task.append_row_to", root / "job.yaml", "append_row_to", fragment)


def test_append_row_to_absolute_roots(tmp_path: Path) -> None:
    """An absolute append_row_to must lie under an allowed root when roots are set."""
    root = make_job(
        tmp_path / "job",
        f"input_data: ./data\ntask:\n  entry_script: score.py\n  append_row_to: {tmp_path}/x.txt\n",
    )
    assert load(root).append_row_to == str(tmp_path / "x.txt")
    assert (
        "outside the allowed roots" in load_error(root, roots=(tmp_path / "job" / "data",)).problem
    )


@pytest.mark.parametrize(
    ("text", "action", "file_name"),
    [
        ("output_action: append_row\n", "append_row", "parallel_run_step.txt"),
        ("output_action: append_row\nappend_row_file_name: preds.csv\n", "append_row", "preds.csv"),
        ("output_action: summary_only\n", "summary_only", None),
        ("output_action: SUMMARY_ONLY\n", "summary_only", None),
    ],
)
def test_v1_output_action(tmp_path: Path, text: str, action: str, file_name: str | None) -> None:
    """v1 output_action and append_row_file_name choose the append_row file under outputs/."""
    root = make_job(tmp_path, "input_data: ./data\nentry_script: score.py\n" + text)
    spec = load(root)
    assert spec.output_action == action
    assert spec.append_row_to == (str(root / "outputs" / file_name) if file_name else None)


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ("output_action: summary_only\n", "output_action", "keep one"),
        ("append_row_file_name: x.txt\n", "append_row_file_name", "keep one"),
        ("output_action: file\n", "output_action", "append_row | summary_only"),
    ],
)
def test_output_conflicts(tmp_path: Path, text: str, key: str, fragment: str) -> None:
    """Contradicting v1 and v2 output settings are errors naming both."""
    root = make_job(
        tmp_path,
        "input_data: ./data\ntask:\n  entry_script: score.py\n  append_row_to: out.txt\n" + text,
    )
    assert_error(load_error(root), key, root / "job.yaml", key + ":", fragment)


def test_append_row_file_name_with_folders(tmp_path: Path) -> None:
    """append_row_file_name is a file name, not a path."""
    root = make_job(
        tmp_path,
        "input_data: ./data\nentry_script: score.py\noutput_action: append_row\nappend_row_file_name: ../x.txt\n",
    )
    assert "without folders" in load_error(root).problem


def test_summary_only_notes_unused_file_name(tmp_path: Path) -> None:
    """append_row_file_name without append_row is noted as unused."""
    root = make_job(
        tmp_path, "input_data: ./data\nentry_script: score.py\nappend_row_file_name: x.txt\n"
    )
    assert "not used: append_row_file_name: the output action is summary_only" in load(root).notes


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("input_data: ./{long}\ntask: {{entry_script: score.py}}\n", "input_data"),
        ("input_data: ./data\ntask: {{entry_script: {long}.py}}\n", "task.entry_script"),
    ],
)
def test_path_too_long(tmp_path: Path, text: str, key: str) -> None:
    """A path the file system cannot hold is an error at its key, not an OSError."""
    root = make_job(tmp_path, text.format(long="a" * 300))
    err = load_error(root)
    assert err.key == key and "too long" in err.problem, str(err)


def test_file_system_error_is_a_job_spec_error(tmp_path: Path) -> None:
    """A file system error no check foresaw still ends as one JobSpecError, not an OSError."""
    root = make_job(tmp_path)
    (root / "origin.json").write_text(json.dumps({"job_dir": "/" + "a" * 300}), encoding="utf-8")
    err = load_error(root)
    assert "File name too long" in err.problem
