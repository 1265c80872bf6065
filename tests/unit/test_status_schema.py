"""The status document's schema: the validator, and its documentation."""

from __future__ import annotations

from pathlib import Path

from prsd.spool.statusschema import SCHEMA_VERSION, STATUS_SCHEMA, validate_status

DOCS = Path(__file__).resolve().parents[2] / "docs" / "prsctl.md"


def _doc() -> dict[str, object]:
    return {
        "schema": SCHEMA_VERSION,
        "job_id": "j-1",
        "state": "Running",
        "reason": "",
        "total_mbs": None,
        "eta_s": None,
        "succeeded_mbs": 3,
        "rate_mbs_per_s": 1.5,
        "split_done": False,
        "errors": [],
    }


def test_a_valid_document_has_no_problems() -> None:
    """Nulls where allowed, ints for floats, optional fields absent: valid."""
    assert validate_status(_doc()) == []


def test_problems_are_named() -> None:
    """Missing required fields, wrong types, booleans for counts and a new version are reported."""
    doc = _doc()
    del doc["job_id"]
    doc["succeeded_mbs"] = "3"
    doc["failed_mbs"] = True
    doc["schema"] = 2
    problems = validate_status(doc)
    assert "job_id: missing" in problems
    assert "succeeded_mbs: str where int is expected" in problems
    assert "failed_mbs: a boolean where int is expected" in problems
    assert any(p.startswith("schema: 2") for p in problems)
    assert validate_status([1]) == ["the document is not a JSON object"]


def test_every_field_is_documented() -> None:
    """docs/prsctl.md has a row for every field of the schema, with its version."""
    text = DOCS.read_text(encoding="utf-8")
    missing = [k for k in STATUS_SCHEMA if f"| `{k}` |" not in text]
    assert not missing, f"undocumented status fields: {missing}"
    assert f"schema version {SCHEMA_VERSION}" in text.lower()
