"""One exception hierarchy for prsd.

Every error carries the data needed to explain itself to the user and renders to
exactly one line (``str(err)``), which is what ``job_result.txt``, ``prsd run`` and
``prsctl`` print. Nothing here imports anything but the standard library and
``prsd.logline`` (which imports only the standard library).
"""

from __future__ import annotations

from enum import IntEnum

from prsd.logline import one_line


class ExitCode(IntEnum):
    """Process exit codes of ``prsd`` and ``prsctl`` (systemd units refer to them)."""

    OK = 0  # the job completed, or the command did what it was asked
    FAILURE = 1  # an unexpected internal error (a bug): see the daemon log
    CONFIG = 2  # bad command line, job spec or configuration: fix it, restarting will not help
    SPOOL_REFUSED = 3  # the spool's file system cannot keep the protocol's promises
    NODE_ID_TAKEN = 4  # another live agent holds this agent's node id: the units do not restart
    AGENT_IDLE = 41  # `prsd agent --exit-when-idle`: no job has work for this node (Azure's code)
    JOB_FAILED = 42  # the job ended Failed: see logs/job_result.txt (Azure's code)
    JOB_CANCELED = 43  # the job was canceled with `prsctl cancel`


class PrsdError(Exception):
    """Base of every error prsd raises on purpose."""

    def one_line(self) -> str:
        """The error as one line for ``job_result.txt`` and the command line.

        Whitespace runs become one space; any other control character (an escape
        sequence from a job's own text) is written as a visible escape.
        """
        return one_line(" ".join(str(self).split()))


class JobSpecError(PrsdError):
    """A job spec (``job.yaml``) that cannot be run as written.

    Attributes:
        key: the dotted key at fault (``retry_settings.timeout``), or "" for the whole file.
        location: the file (and line, when known) the key was read from.
        problem: what is wrong and what is expected.
    """

    def __init__(self, key: str, location: str, problem: str) -> None:
        self.key = key
        self.location = location
        self.problem = problem
        where = f"{location}: " if location else ""
        what = f"{key}: " if key else ""
        super().__init__(f"{where}{what}{problem}")


class SpoolError(PrsdError):
    """The spool is missing, unwritable, inconsistent or on an unsafe file system."""


class UnsafeSpoolError(SpoolError):
    """The spool's file system cannot keep the claim protocol's promises."""


class InputError(PrsdError):
    """An input (file, folder, table) that cannot be read or split."""
