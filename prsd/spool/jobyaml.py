"""``jobs/<id>/job.yaml`` as a client writes it into its staging folder.

Promise: :func:`write_job_yaml` is the one writer of a job's ``job.yaml`` text (a job
file with ``--set`` overrides applied, a pipeline's step, a retry's copy) into a job
folder being staged by its submitter (``prsctl submit``, ``prsd run``, a pipeline, a
retry): a new file in a folder only the submitter writes, made durable with the
whole folder (``fsync_tree``) before the folder is published. A job file copied
as it is goes by ``shutil.copyfile``; the file is read back on the owner's side by
prsd/jobspec/load.py.

Errors: ``OSError`` (the folder is missing or not writable, the disk is full).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prsd.spool.layout import JobLayout

__all__ = ["write_job_yaml"]


def write_job_yaml(layout: JobLayout, text: str) -> None:
    """Write ``text`` as the staged job's ``job.yaml`` (UTF-8).

    Raises:
        OSError: it cannot be written.
    """
    layout.job_yaml.write_text(text, encoding="utf-8")
