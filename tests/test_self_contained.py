"""The repository stands on its own: no code, test, script or page cites a document that
is not in it (the project's former contract and style notes, by section number or name).
A rule such a note pointed at lives in ``docs/``; cite the page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("prsd", "tests", "docs", "bench", "compat", "azureml_user", "scripts", "examples")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".sh", ".cfg", ".ini", ".json"}
# "<contract> section 4", "<contract> 6", "the <contract>'s example", "<style note>: ..."
OUTSIDE = re.compile(r"\bSPEC(\s+(sections?|§)|\s+\d|'s\b|\.md)|\bSTYLE(:|\.md)")


def _files() -> list[Path]:
    found = [ROOT / "README.md"]
    for folder in FOLDERS:
        found.extend(
            p
            for p in (ROOT / folder).rglob("*")
            if p.suffix in SUFFIXES and p.is_file() and "__pycache__" not in p.parts
        )
    return sorted(p for p in found if p != Path(__file__).resolve())  # its examples below


def outside_references(text: str) -> list[str]:
    """The lines of ``text`` that cite a document outside the repository."""
    return [line.strip() for line in text.splitlines() if OUTSIDE.search(line)]


def test_no_file_cites_a_document_outside_the_repository() -> None:
    """Every citation names a page of docs/ (or nothing)."""
    found = {
        str(p.relative_to(ROOT)): lines
        for p in _files()
        if (lines := outside_references(p.read_text(encoding="utf-8", errors="replace")))
    }
    assert not found, f"cite the docs/ page that holds the rule instead: {found}"


@pytest.mark.parametrize(
    ("line", "cited"),
    [
        ('"""Splitting inputs (SPEC section 3)."""', True),
        ("# see SPEC sections 4 and 7", True),
        ("slot assignment (SPEC 6)", True),
        ("The SPEC's example job.yaml", True),
        ("read /work/shared/SPEC.md", True),
        ("(STYLE: batch stat/listdir)", True),
        ("V1_SPEC = 1; _CONDA_SPEC.match(x); JOBSPEC", False),
        ("the init rules (docs/supervision.md)", False),
    ],
)
def test_citations_are_recognised(line: str, cited: bool) -> None:
    """The check sees each spelling of such a citation and leaves ordinary names alone."""
    assert bool(outside_references(line)) is cited
