"""What a running build is doing, read from the lines its tool prints; pure.

Invariant: :func:`phase_of` maps one line of uv's output to the phase that line
starts (None: the line starts none), so the phase a node reports is always one uv
reached: ``resolving`` (set when ``uv pip install`` starts), then
``downloading and building`` after ``Resolved N packages``, ``building NAME from
source`` while uv builds a package without a wheel, and ``installing`` after
``Prepared N packages``. The other phases are named by the builder itself:
:data:`CREATING` (``uv venv``) and :data:`CONDA` (a conda-family tool, which says
nothing parseable before it ends).

Errors: none.
"""

from __future__ import annotations

import re

STARTING = "starting"
CREATING = "creating the virtual environment"
RESOLVING = "resolving"
CONDA = "creating the conda environment"
WAITING = "waiting for another build"
_BUILDING = re.compile(r"^Building (\S+)")
_RESOLVED = re.compile(r"^Resolved \d+ packages?")
_PREPARED = re.compile(r"^Prepared \d+ packages?")


def phase_of(line: str) -> str | None:
    """The phase uv's output ``line`` starts, or None."""
    text = line.strip()
    built = _BUILDING.match(text)
    if built:
        return f"building {built.group(1)} from source"
    if _RESOLVED.match(text):
        return "downloading and building"
    if _PREPARED.match(text):
        return "installing"
    return None
