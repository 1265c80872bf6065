"""The user docs stand on their own: no citations of a contract users do not have, and
every link to another page of the project (and its section) leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    lines = page.read_text(encoding="utf-8").splitlines()
    return {_slug(line.lstrip("#")) for line in lines if line.startswith("#")}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_cites_spec_sections(page: Path) -> None:
    """Users have docs/, not the project's internal contract."""
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"SPEC (section|§)", text), page


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_to_project_pages_resolve(page: Path) -> None:
    """A relative link names an existing file, and its #section a heading there."""
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if "://" in target or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.name}: {target}"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest), f"{page.name}: {target}"
