"""Pure decisions of the agent: how a worker's death is classified."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from prsd.storage.records import CRASHED, OOM, TIMEOUT

if TYPE_CHECKING:
    from prsd.agent.proc import ExitInfo


def classify_exit(exit_info: ExitInfo, *, timed_out: bool, oom_evidence: bool = False) -> str:
    """The attempt status for a worker that ended while running a mini-batch.

    ``timeout`` when prsd stopped it for time; ``oom`` when there is evidence that the
    kernel's OOM killer acted (a SIGKILL prsd did not send, plus the evidence); else
    ``crashed``.
    """
    if timed_out:
        return TIMEOUT
    if oom_evidence and exit_info.returncode == -signal.SIGKILL and not exit_info.sent_by_prsd:
        return OOM
    return CRASHED
