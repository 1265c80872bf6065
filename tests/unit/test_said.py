"""Grouping what a job does differently from Azure: one list, said in group order."""

from __future__ import annotations

import pytest

from prsd.jobspec.said import (
    DID_YOU_MEAN,
    NOTE,
    REDIRECTED,
    JobNote,
    job_notes,
    note,
    note_lines,
    notes_text,
    stderr_text,
)


def test_keys_and_notes_are_grouped_in_order_once_each() -> None:
    """Ignored keys, system arguments, notes: grouped, duplicates said once."""
    said = job_notes(
        ["compute", "task.program_arguments --nice", "compute"],
        [note(DID_YOU_MEAN, "--x? did you mean --y?"), note(REDIRECTED, "output o: moved")],
        ["a plain sentence"],
    )
    assert note_lines(said) == [
        "not used: compute",
        "passed on: task.program_arguments --nice",
        "redirected: output o: moved",
        "did you mean: --x? did you mean --y?",
        "note: a plain sentence",
    ]


def test_a_sentence_without_a_known_group_is_a_plain_note() -> None:
    """Old spec.json notes (no group) still read, as plain notes."""
    assert job_notes([], ["output o: written to /x"]) == [JobNote(NOTE, "output o: written to /x")]


def test_an_unknown_group_is_refused() -> None:
    """A producer cannot invent a group the readers do not know."""
    with pytest.raises(ValueError, match="unknown note group"):
        note("maybe", "text")


def test_the_notes_file_has_a_heading_per_group() -> None:
    """job_notes.txt: a heading per group, its notes indented; a job with none says so."""
    text = notes_text(job_notes(["compute", "tags"], [note(REDIRECTED, "output o: moved")]))
    assert text.splitlines() == [
        "not used - keys accepted and not used (they mean something on Azure only):",
        "  compute",
        "  tags",
        "",
        "redirected - outputs and paths prsd places elsewhere:",
        "  output o: moved",
    ]
    assert notes_text([]) == "Nothing to note: the job runs as written.\n"


def test_a_key_with_a_newline_stays_on_one_line() -> None:
    """A key from the user's YAML cannot forge a line."""
    (said,) = job_notes(["a\nnot used: forged"], [])
    assert said.line() == "not used: a\\nnot used: forged"
    assert len(notes_text([said]).splitlines()) == 2


def test_a_plain_note_on_stderr_says_note_once() -> None:
    """``prsd: note: input_data: ...``, not ``prsd: note: note: input_data: ...``."""
    lines = note_lines(job_notes(["compute"], [note(NOTE, "input_data: x")]))
    assert stderr_text("prsd", lines) == (
        "prsd: note: not used: compute\nprsd: note: input_data: x\n"
    )
