"""Containment rules: control characters, allowed roots from the environment, job ids."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from prsd.errors import JobSpecError
from prsd.jobspec.paths import Roots, refuse_control, resolve
from prsd.jobspec.yamlsafe import Doc
from prsd.spool.jobid import make_job_id, sanitize_name
from prsd.spool.layout import valid_job_id


def _site() -> object:
    return Doc(Path("/j/job.yaml"), {}, {"input_data": 3}).site("input_data")


@pytest.mark.parametrize("text", ["a\nb", "a\rb", "\x1b[2J", "x\x7f", "tab\there", "nul\0"])
def test_control_characters_are_refused(text: str) -> None:
    """Any C0 control character or DEL names itself in the error, at the key's line."""
    with pytest.raises(JobSpecError, match="control character") as info:
        refuse_control(text, _site())  # type: ignore[arg-type]  # a Site
    assert info.value.location == "/j/job.yaml:3"


def test_printable_paths_pass() -> None:
    """Spaces and non-ASCII letters are fine."""
    refuse_control("./data set/été.csv", _site())  # type: ignore[arg-type]  # a Site


def test_allowed_roots_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PRSD_ALLOWED_ROOTS confines absolute paths when the caller gives no roots."""
    inside = tmp_path / "data"
    inside.mkdir()
    monkeypatch.setenv("PRSD_ALLOWED_ROOTS", f"{tmp_path}:/nonexistent")
    roots = Roots.of([])
    assert roots.allows(inside) and not roots.allows(Path("/etc"))
    site = _site()
    assert resolve(tmp_path, str(inside), roots, site) == inside  # type: ignore[arg-type]  # a Site
    with pytest.raises(JobSpecError, match="outside the allowed roots"):
        resolve(tmp_path, "/etc/passwd", roots, site)  # type: ignore[arg-type]  # a Site
    monkeypatch.delenv("PRSD_ALLOWED_ROOTS")
    assert Roots.of([]).allows(Path("/etc"))


@pytest.mark.parametrize(
    "name",
    [
        "../../etc",
        "evil\nname",
        "\x1b[2J",
        "",
        "...",
        "/abs/path",
        "A" * 500,
        "naïve job",
        ".hidden",
    ],
)
def test_job_names_become_safe_ids(name: str) -> None:
    """Any name, however hostile, gives a valid id without '/', '..', dots or control characters."""
    job_id = make_job_id(name, datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert valid_job_id(job_id)
    assert "/" not in job_id and ".." not in job_id and not job_id.startswith(".")
    assert sanitize_name(name)
