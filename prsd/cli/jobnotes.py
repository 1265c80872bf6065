"""Saying a job's notes on stderr before it starts (``prsd run``, ``prsctl submit``).

One line each, grouped (:mod:`prsd.jobspec.said`): ``prsd: note: <group>: <text>``.
``--quiet`` silences this printing only; the notes stay in ``prsctl status`` and
``logs/sys/job_notes.txt``.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from prsd.jobspec.said import REDIRECTED, note_lines, spec_notes, stderr_text

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.jobspec import JobSpec


def print_notes(spec: JobSpec, moved: tuple[Path, Path], prog: str, *, quiet: bool = False) -> None:
    """Write the job's notes to stderr (nothing with ``quiet``).

    Args:
        spec: the spec as loaded from the user's folder at submission.
        moved: (the user's job folder, the job's folder in the spool): a redirected
            output is named where the job will write it, in the spool.
        prog: the command's name, first on each line (``prsd``, ``prsctl``).
    """
    if quiet:
        return
    src, dest = (str(p.absolute()) + os.sep for p in moved)
    lines = [
        line.replace(src, dest) if line.startswith(REDIRECTED) else line
        for line in note_lines(spec_notes(spec))
    ]
    if lines:
        sys.stderr.write(stderr_text(prog, lines))
        sys.stderr.flush()
