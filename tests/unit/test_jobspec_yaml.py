"""Finding and parsing job.yaml: hostile files fail fast, with the file and line."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from prsd.errors import JobSpecError
from prsd.jobspec import find_job_file
from prsd.jobspec.yamlsafe import MAX_DEPTH, MAX_FILE_BYTES
from tests.unit.jobspec_cases import MINIMAL, assert_error, load, load_error, make_job

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize("name", ["job.yaml", "job.yml"])
def test_finds_either_job_file_name(tmp_path: Path, name: str) -> None:
    """job.yaml and job.yml are both accepted."""
    make_job(tmp_path, name=name)
    assert find_job_file(tmp_path) == tmp_path / name


def test_no_job_file(tmp_path: Path) -> None:
    """A folder without a job file is an error naming the folder."""
    err = load_error(tmp_path)
    assert err.location == str(tmp_path)
    assert "no job.yaml" in err.problem


def test_both_job_files(tmp_path: Path) -> None:
    """job.yaml and job.yml together are ambiguous."""
    make_job(tmp_path)
    (tmp_path / "job.yml").write_text(MINIMAL, encoding="utf-8")
    assert "both job.yaml and job.yml" in load_error(tmp_path).problem


def test_job_dir_not_a_folder(tmp_path: Path) -> None:
    """A job "folder" that is a file is refused."""
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(JobSpecError, match="is not a folder"):
        find_job_file(tmp_path / "file")


def test_job_file_is_a_directory(tmp_path: Path) -> None:
    """A job.yaml that is a directory is not a regular file."""
    (tmp_path / "job.yaml").mkdir()
    assert "not a regular file" in load_error(tmp_path).problem


def test_job_file_is_a_fifo(tmp_path: Path) -> None:
    """A FIFO in place of job.yaml is refused without blocking on it."""
    os.mkfifo(tmp_path / "job.yaml")
    assert "not a regular file" in load_error(tmp_path).problem


def test_job_file_symlink_outside(tmp_path: Path) -> None:
    """A job.yaml symlink leading outside the job folder is refused."""
    outside = make_job(tmp_path / "elsewhere")
    job = tmp_path / "job"
    job.mkdir()
    (job / "job.yaml").symlink_to(outside / "job.yaml")
    assert "symlink leading outside" in load_error(job).problem


def test_job_file_symlink_inside(tmp_path: Path) -> None:
    """A job.yaml symlink to a file inside the job folder is followed."""
    make_job(tmp_path, name="real.yaml")
    (tmp_path / "job.yaml").symlink_to("real.yaml")
    assert load(tmp_path).entry_script == "score.py"


def test_too_large_refused_before_parsing(tmp_path: Path) -> None:
    """A job file over 1 MiB is refused by size, not parsed."""
    make_job(tmp_path, MINIMAL + "#" * MAX_FILE_BYTES)
    err = load_error(tmp_path)
    assert err.location == str(tmp_path / "job.yaml")
    assert "at most 1048576 bytes" in err.problem


@pytest.mark.parametrize(
    ("text", "needle", "fragment"),
    [
        ("input_data: ./data\ntask: [unclosed\n", None, "malformed YAML"),
        ("input_data: ./data\n  bad: indent\n", "bad: indent", "malformed YAML"),
        ("input_data: ./data\n---\ninput_data: ./other\n", "---", "malformed YAML"),
        ("input_data: !!python/object:os.system ls\n", "input_data", "malformed YAML"),
        ("input_data: !custom ./data\n", "input_data", "malformed YAML"),
    ],
)
def test_malformed_yaml_names_line(
    tmp_path: Path, text: str, needle: str | None, fragment: str
) -> None:
    """Malformed YAML, extra documents and unsafe tags are errors with a line."""
    make_job(tmp_path, text)
    err = load_error(tmp_path)
    assert fragment in err.problem
    assert err.location.startswith(f"{tmp_path / 'job.yaml'}:")
    if needle is not None:
        path = tmp_path / "job.yaml"
        assert_error(err, "", path, needle, fragment)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("base: &b ./data\ninput_data: *b\ntask: {entry_script: score.py}\n", "base:"),
        (
            "a: &a [x, x, x]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n",
            "a: &a",
        ),
        ("task: &t {entry_script: score.py}\nother:\n  <<: *t\n", "task:"),
    ],
)
def test_anchors_and_aliases_refused(tmp_path: Path, text: str, needle: str) -> None:
    """YAML anchors, aliases and merge keys (billion laughs) are refused with a line."""
    make_job(tmp_path, text)
    err = load_error(tmp_path)
    assert_error(err, "", tmp_path / "job.yaml", needle, "anchors and aliases")


def test_deep_nesting_refused(tmp_path: Path) -> None:
    """Nesting deeper than the limit is refused instead of exhausting the stack."""
    depth = MAX_DEPTH + 5
    make_job(tmp_path, "input_data: " + "[" * depth + "]" * depth + "\n")
    assert f"nested deeper than {MAX_DEPTH}" in load_error(tmp_path).problem


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "the file is empty"),
        ("# only a comment\n", "the file is empty"),
        ("- input_data: ./data\n", "got a list"),
        ("just text\n", "a mapping of keys at the top level"),
    ],
)
def test_empty_or_not_a_mapping(tmp_path: Path, text: str, fragment: str) -> None:
    """An empty file, a top-level list or scalar are errors saying what is expected."""
    make_job(tmp_path, text)
    err = load_error(tmp_path)
    assert fragment in err.problem
    assert err.location == f"{tmp_path / 'job.yaml'}:1"


def test_duplicate_key(tmp_path: Path) -> None:
    """A key written twice is an error naming both lines."""
    make_job(tmp_path, MINIMAL + "input_data: ./other\n")
    err = load_error(tmp_path)
    assert_error(err, "input_data", tmp_path / "job.yaml", "./other", "first written on line 1")


def test_non_string_key(tmp_path: Path) -> None:
    """Keys must be strings."""
    make_job(tmp_path, MINIMAL + "1: x\n")
    err = load_error(tmp_path)
    assert_error(err, "1", tmp_path / "job.yaml", "1: x", "keys must be strings")


def test_not_utf8(tmp_path: Path) -> None:
    """A job file that is not UTF-8 is refused."""
    make_job(tmp_path)
    (tmp_path / "job.yaml").write_bytes(b"name: \xff\xfe\n")
    assert "not UTF-8" in load_error(tmp_path).problem


def test_utf8_bom_accepted(tmp_path: Path) -> None:
    """A UTF-8 byte order mark (Windows editors) is accepted."""
    make_job(tmp_path)
    path = tmp_path / "job.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert load(tmp_path).input.paths == (str(tmp_path / "data"),)


@pytest.mark.parametrize("name", ["bad\x1bname", "tab\tname", "zero\u200bwidth", "rtl\u202ename"])
def test_control_characters_in_name(tmp_path: Path, name: str) -> None:
    """Control and format characters in name are refused."""
    make_job(tmp_path, MINIMAL + f'name: "{_escape(name)}"\n')
    err = load_error(tmp_path)
    assert_error(err, "name", tmp_path / "job.yaml", "name:", "control character")


def _escape(text: str) -> str:
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


def test_name_too_long(tmp_path: Path) -> None:
    """A name over 255 characters is refused."""
    make_job(tmp_path, MINIMAL + f"name: {'x' * 300}\n")
    assert "at most 255" in load_error(tmp_path).problem


def test_error_is_one_line(tmp_path: Path) -> None:
    """Every message renders to one line: file, line, key, problem."""
    make_job(tmp_path, MINIMAL + "retry_settings:\n  timeout: abc\n")
    err = load_error(tmp_path)
    path = tmp_path / "job.yaml"
    line = 5
    assert str(err) == (
        f"{path}:{line}: retry_settings.timeout: expected a number of seconds in "
        "(0, 259200], got 'abc'"
    )


@pytest.mark.parametrize(
    ("value", "fragment"),
    [("1" * 5000, "cannot read the value"), ("2024-13-45", "cannot read the value")],
)
def test_values_python_cannot_build(tmp_path: Path, value: str, fragment: str) -> None:
    """Scalars PyYAML fails to build (a 5000-digit int, a bad date) are errors with a line."""
    make_job(tmp_path, MINIMAL + f"retry_settings:\n  timeout: {value}\n")
    err = load_error(tmp_path)
    assert_error(err, "retry_settings.timeout", tmp_path / "job.yaml", "timeout:", fragment)


@pytest.mark.parametrize(("value", "expected"), [("2024", "2024"), ("2024-06-30", "2024-06-30")])
def test_unquoted_number_or_date_name(tmp_path: Path, value: str, expected: str) -> None:
    """An unquoted number or date is still a name."""
    make_job(tmp_path, MINIMAL + f"name: {value}\n")
    assert load(tmp_path).name == expected
