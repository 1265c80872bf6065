"""What a job does differently from Azure, said once: the spec's ``ignored`` and ``notes``.

Pure. Every part of the loader (keys, inputs, outputs, program arguments,
environments, pipeline steps) records into two lists that travel in ``spec.json``:

- ``JobSpec.ignored``: a key accepted and not used (``compute``), or an Azure system
  argument passed to the script and not acted on (``task.program_arguments
  --copy_logs_to_parent``);
- ``JobSpec.notes``: a sentence, made by :func:`note` with its group
  (``redirected: output scored: ... written to ...``); a sentence without a known
  group reads as a plain note.

This module is the one place that turns both into what the user reads, grouped and one
line each: ``prsd run`` and ``prsctl submit`` print them on stderr before the job
starts, ``prsctl status JOB`` shows them (and ``--json`` lists them), and the leader
writes them to ``logs/sys/job_notes.txt``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prsd.logline import one_line

if TYPE_CHECKING:
    from collections.abc import Iterable

    from prsd.jobspec.model import JobSpec

NOT_USED = "not used"
PASSED_ON = "passed on"
REDIRECTED = "redirected"
DID_YOU_MEAN = "did you mean"
ENVIRONMENT = "environment"
NOTE = "note"

# The order groups are said in, and what each means for the user.
GROUPS: dict[str, str] = {
    NOT_USED: "keys accepted and not used (they mean something on Azure only)",
    PASSED_ON: "Azure system arguments passed to the script, not acted on by prsd",
    REDIRECTED: "outputs and paths prsd places elsewhere",
    DID_YOU_MEAN: "names close to one prsd knows",
    ENVIRONMENT: "the job's environment",
    NOTE: "other differences",
}


@dataclass(frozen=True)
class JobNote:
    """One thing said to the user: its group and its text."""

    group: str
    text: str

    def line(self) -> str:
        return one_line(f"{self.group}: {self.text}")

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "text": self.text}


def note(group: str, text: str) -> str:
    """A sentence for ``JobSpec.notes`` in ``group`` (one of :data:`GROUPS`).

    Raises:
        ValueError: ``group`` is not a known group.
    """
    if group not in GROUPS:
        raise ValueError(f"unknown note group {group!r}")
    return f"{group}: {text}"


def job_notes(
    ignored: Iterable[str], notes: Iterable[str], extra: Iterable[str] = ()
) -> list[JobNote]:
    """Every ignored key and note of a spec, once each, in group order.

    Args:
        ignored: ``JobSpec.ignored``.
        notes: ``JobSpec.notes``.
        extra: notes made outside the spec (an environment image, as the node sees it).
    """
    found: dict[JobNote, None] = {}
    for key in ignored:
        if " --" in key:
            found[JobNote(PASSED_ON, key)] = None
        else:
            found[JobNote(NOT_USED, key)] = None
    for text in [*notes, *extra]:
        found[_parse(text)] = None
    order = list(GROUPS)
    return sorted(found, key=lambda n: order.index(n.group))


def _parse(text: str) -> JobNote:
    group, sep, rest = text.partition(": ")
    if sep and group in GROUPS:
        return JobNote(group, rest)
    return JobNote(NOTE, text)


def note_lines(notes: Iterable[JobNote]) -> list[str]:
    """One line per note, grouped: ``<group>: <text>``, in group order."""
    return [n.line() for n in notes]


def stderr_text(prog: str, lines: Iterable[str]) -> str:
    """``PROG: note: LINE`` for each of :func:`note_lines` (a plain note's ``note:`` said once)."""
    return "".join(f"{prog}: note: {line.removeprefix(NOTE + ': ')}\n" for line in lines)


def notes_text(notes: list[JobNote]) -> str:
    """``logs/sys/job_notes.txt``: a heading per group, then its notes, one a line."""
    if not notes:
        return "Nothing to note: the job runs as written.\n"
    blocks: list[str] = []
    for group, meaning in GROUPS.items():
        mine = [f"  {one_line(n.text)}\n" for n in notes if n.group == group]
        if mine:
            blocks.append(f"{group} - {meaning}:\n" + "".join(mine))
    return "\n".join(blocks)


def spec_notes(spec: JobSpec) -> list[JobNote]:
    """Everything to say about ``spec``, with the environment's image as this node sees it.

    Reads this node's environment settings (the container runtime); otherwise pure.
    """
    extra: list[str] = []
    if spec.python is None and spec.build_environment.get("image"):
        from prsd.envs.image import image_note
        from prsd.envs.settings import node_runtime
        from prsd.jobspec.runner import is_command_step

        # A pipeline's command step names its image at environment.image.
        key = "environment.image" if is_command_step(spec) else "task.environment.image"
        said = image_note(spec.build_environment, node_runtime(), key)
        if said:
            extra.append(note(ENVIRONMENT, said))
    return job_notes(spec.ignored, spec.notes, extra)
