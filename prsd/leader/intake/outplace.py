"""Where the end-of-job merge may write a job's append_row file, decided once.

Invariant: the output folder is reached from an anchor the daemons trust, one folder
at a time without following a link (prsd/spool/dirfd.py):

- an output in the job's spool folder is reached from ``jobs/<id>/`` itself;
- an output elsewhere from the allowed root that holds it (``PRSD_ALLOWED_ROOTS``);
- for a confined job (its owner is not the daemons' user) nothing else: an output
  that is neither is refused. Under root daemons the folders and the file are made
  by the job's owner side with the owner's rights (:mod:`prsd.asowner`), so the
  kernel decides which folder the owner may write; a non-root daemon running
  another user's job checks that the output folder belongs to that user or itself.
- a job the daemons' user runs for itself writes where its path says, with its own
  rights, as before.

Errors: :class:`OutputRefused` (a :class:`PrsdError`) names the path and why; the job
fails with it and nothing is written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from prsd.errors import PrsdError
from prsd.jobspec.paths import Roots
from prsd.spool.jobowner import JobOwner, OwnerRecordError, owner

if TYPE_CHECKING:
    from prsd.spool.layout import JobLayout


class OutputRefused(PrsdError):
    """The append_row file lies where the daemons may not write for this job."""


@dataclass(frozen=True)
class OutputPlace:
    """The output folder as (trusted anchor, folder names below it) and who may own it.

    Attributes:
        anchor: the folder opened by name (trusted).
        parts: the folders below the anchor, walked without following links.
        folder_uids: the output folder must belong to one of these (empty: no check;
            the owner side's own rights decide).
    """

    anchor: Path
    parts: tuple[str, ...] = ()
    folder_uids: frozenset[int] = field(default_factory=frozenset)


def job_owner(layout: JobLayout) -> JobOwner:
    """The recorded owner of the job (:func:`prsd.spool.jobowner.owner`).

    Raises:
        OutputRefused: no owner record: nothing is written for a job of unknown owner.
    """
    try:
        return owner(layout)
    except OwnerRecordError as exc:
        raise OutputRefused(f"{exc.one_line()}; the job's output is not written") from exc


def output_place(layout: JobLayout, out_path: Path, *, roots: Roots | None = None) -> OutputPlace:
    """Decide how the merge reaches the folder of ``out_path``.

    Raises:
        OutputRefused: a confined job's output outside its folder and every allowed root.
    """
    owner = job_owner(layout)
    daemon = os.geteuid()
    confined = owner.uid != daemon
    # root: the owner side acts with the owner's ids; another daemon user checks owners
    uids = frozenset({owner.uid, daemon}) if confined and daemon != 0 else frozenset()
    folder = Path(os.path.abspath(out_path.parent))
    job_root = Path(os.path.abspath(layout.root))
    if folder == job_root or folder.is_relative_to(job_root):
        return OutputPlace(job_root, folder.relative_to(job_root).parts, uids)
    real = Path(os.path.realpath(folder))
    for root in (roots or Roots.of([])).folders:
        if real == root or real.is_relative_to(root):
            return OutputPlace(root, real.relative_to(root).parts, uids)
    if confined:
        raise OutputRefused(
            f"the append_row file {out_path} lies neither in the job's folder nor under an "
            "allowed root; nothing was written"
        )
    folder.mkdir(parents=True, exist_ok=True)
    return OutputPlace(folder)
