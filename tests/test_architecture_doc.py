"""docs/architecture.md carries the package graph drawn from the code, and it is current."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "archgraph.py"
DOC = ROOT / "docs" / "architecture.md"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False
    )


def test_the_drawn_graph_in_the_doc_is_current() -> None:
    done = _run("--check", str(DOC))
    assert done.returncode == 0, done.stderr


def test_a_stale_graph_is_caught_and_rewritten(tmp_path: Path) -> None:
    doc = tmp_path / "architecture.md"
    shutil.copy(DOC, doc)
    text = doc.read_text(encoding="utf-8")
    doc.write_text(text.replace("prsd_leader --> prsd_spool\n", ""), encoding="utf-8")
    stale = _run("--check", str(doc))
    assert stale.returncode == 1
    assert "not current" in stale.stderr
    assert _run("--write", str(doc)).returncode == 0
    assert doc.read_text(encoding="utf-8") == text


def test_the_graph_names_every_package_and_the_known_edges() -> None:
    drawing = _run().stdout
    for package in ("prsd_leader", "prsd_agent", "prsd_spool", "prsd_worker"):
        assert f'{package}["' in drawing
    assert "prsd_leader --> prsd_spool" in drawing
    assert "prsd_leader --> prsd_agent" not in drawing
    assert "prsd_agent --> prsd_leader" not in drawing
