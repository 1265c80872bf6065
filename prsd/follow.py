"""``prsd run`` of a job handed to the spool's daemons: follow it to its end.

:func:`follow_interruptible` waits for the job's final record (looked for every
FOLLOW_EVERY_S), shows its progress (:func:`report_progress`, every PROGRESS_EVERY_S),
and takes the user's Ctrl-C (:class:`prsd.ctrlc.CtrlC`): the first asks the leader to
cancel the job (a request in ``requests/``, as ``prsctl cancel`` sends) and waits, a
second leaves at once, withdrawing a cancel no leader answered. It loads neither the
leader nor the agent (``tests/unit/test_import_paths.py``): the daemons run the job, and
this process only reads the spool.

Errors: storage faults reading the spool propagate (``OSError``); a ``final.json``
that is not the daemons' own raises :class:`~prsd.errors.UntrustedFile`.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from prsd.ctrlc import CtrlC, LeftEarly
from prsd.read.jobs import read_job_status
from prsd.spool.finalrecord import FinalState
from prsd.spool.requests import remove, send_request
from prsd.spool.statusfiles import read_final_document

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.spool.layout import JobLayout, SpoolLayout

PROGRESS_EVERY_S = 1.0  # the job's status document is read this often for the view
FOLLOW_EVERY_S = 0.05  # a job the daemons run: its final state is looked for this often


async def follow_interruptible(
    spool: SpoolLayout,
    job_id: str,
    *,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> FinalState | LeftEarly:
    """Wait for ``job_id``, run by the spool's daemons, to end; Ctrl-C as the module
    says (the first cancels the job and waits, a second leaves)."""
    final: FinalState | None = None
    ctrl_c = CtrlC(f"job {job_id}", cancel_asker(spool, job_id), spool.requests, say)
    async with anyio.create_task_group() as outer:
        # Ctrl-C is taken first: the first progress line then says it is this loop's.
        outer.start_soon(ctrl_c.listen, outer.cancel_scope)
        if on_progress is not None:
            outer.start_soon(report_progress, spool, job_id, on_progress)
        final = await _wait_for_final(spool.job(job_id))
        if on_progress is not None:
            on_progress(await anyio.to_thread.run_sync(read_job_status, spool, job_id))
        outer.cancel_scope.cancel()
    if ctrl_c.left:
        return await anyio.to_thread.run_sync(ctrl_c.left_early, partial(end_state, spool, job_id))
    assert final is not None
    return final


def cancel_asker(spool: SpoolLayout, job_id: str) -> Callable[[], Callable[[], None]]:
    """The first Ctrl-C's cancel of one job: a request in ``requests/`` (as ``prsctl
    cancel``); calling it sends the request and returns how to withdraw it."""

    def ask() -> Callable[[], None]:
        request = send_request(spool, job_id, "cancel")
        return partial(remove, spool, request.name)

    return ask


def end_state(spool: SpoolLayout, job_id: str) -> str:
    """The job's state once it has ended ("" before: it stays for a fleet)."""
    state = str(read_job_status(spool, job_id).get("state", ""))
    return state if spool.job(job_id).final.exists() else ""


async def report_progress(
    spool: SpoolLayout, job_id: str, show: Callable[[dict[str, Any]], None]
) -> None:
    """The job's status document, read from the spool (whoever leads), at once and then
    every PROGRESS_EVERY_S."""
    while True:
        show(await anyio.to_thread.run_sync(read_job_status, spool, job_id))
        await anyio.sleep(PROGRESS_EVERY_S)


async def _wait_for_final(layout: JobLayout) -> FinalState:
    """The job's final state, once its leader wrote it (looked for every FOLLOW_EVERY_S):
    the private record, with the reason, where this user may read it (the job's owner
    and its group), else the public one (the reason blanked)."""
    while True:
        doc = await anyio.to_thread.run_sync(read_final_document, layout)
        if doc is not None:
            return FinalState.from_obj(doc)
        await anyio.sleep(FOLLOW_EVERY_S)
