"""How a worker's ``init()`` ended: :class:`InitResult`, and the texts of its failures.

The session (:mod:`prsd.agent.session`) waits for the worker's ``ready``; the slot
(:mod:`prsd.agent.jobrun`) counts failures by the job's init rules. This module only
says what happened, in the words the job's logs and its final reason use:

- :func:`init_timed_out`: still in ``init()`` at the deadline (the third init rule);
  its stacks were dumped into the process's error file;
- :func:`died_during_init`: the worker exited (or was killed) before ``ready``.

Errors: none; every result is a value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.agent.verdicts import ExitInfo


@dataclass(frozen=True)
class InitResult:
    ok: bool
    error: str = ""
    traceback_tail: str = ""
    error_file: str = ""
    init_s: float = 0.0
    timed_out: bool = False  # still in init() at the deadline (the third init rule)
    stopped: bool = False  # stopped by prsd (the job ended): not an init failure


def init_timed_out(deadline_s: float, timeout_s: float, error_file: Path) -> InitResult:
    """``init()`` ran past ``deadline_s`` (3 x ``retry_settings.timeout`` + a margin)."""
    return InitResult(
        False,
        f"init() did not finish within {deadline_s:g} s (3 x retry_settings.timeout"
        f" + {deadline_s - 3 * timeout_s:g} s); its stacks are in {error_file}",
        error_file=str(error_file),
        timed_out=True,
    )


def died_during_init(exit_info: ExitInfo, name: str, stderr: Path) -> InitResult:
    """The worker ``name`` ended before ``ready``; its stderr says why."""
    return InitResult(False, f"{exit_info.describe(name)} during init()", error_file=str(stderr))
