"""``prsd run`` of a job: lead and serve it in this process, or follow the daemons that do.

:func:`run_interruptible` runs the job here with :func:`prsd.runhere.run_here` (the same
Leader and Agent the daemons run, in one process; Ctrl-C as it says: the first asks
the leader to cancel the job, a request in ``requests/`` as ``prsctl cancel`` sends,
and waits; a second leaves at once, withdrawing a cancel no leader answered, so a job
not yet ended stays in the spool for any leader and agents serving it).

:func:`follow_interruptible` is the same wait where daemons serve the spool and run
the job (``prsd run`` handed it to them): progress, Ctrl-C and the end alike, with no
leader or agent in this process.

Errors: as :func:`~prsd.runhere.run_here`; a ``final.json`` that is not the daemons'
own raises :class:`~prsd.errors.UntrustedFile`.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from prsd.leader.end.finish import FinalState
from prsd.leader.end.privatestatus import read_final
from prsd.read.jobs import read_job_status
from prsd.runhere import CtrlC, Here, LeftEarly, run_here
from prsd.spool.requests import remove, send_request
from prsd.spool.statusfiles import read_final_document

MAX_FINAL_BYTES = 1 << 20

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.agent.agent import AgentOptions
    from prsd.agent.forks import ForkServer
    from prsd.leader.leader import Leader
    from prsd.spool.layout import JobLayout, SpoolLayout

__all__ = ["LeftEarly", "follow_interruptible", "run_interruptible", "run_until_done"]

PROGRESS_EVERY_S = 1.0  # the job's status document is read this often for the view
FOLLOW_EVERY_S = 0.05  # a job the daemons run: its final state is looked for this often


async def run_until_done(
    spool: SpoolLayout,
    job_id: str,
    options: AgentOptions,
    *,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> FinalState:
    """Lead and serve ``job_id`` in this process; returns how it ended."""
    final = await run_interruptible(spool, job_id, options, on_progress=on_progress, say=say)
    assert isinstance(final, FinalState)  # only a Ctrl-C leaves early
    return final


async def run_interruptible(
    spool: SpoolLayout,
    job_id: str,
    options: AgentOptions,
    *,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    say: Callable[[str], None] | None = None,
    interrupts: bool = True,
    forks: ForkServer | None = None,
) -> FinalState | LeftEarly:
    """Lead and serve ``job_id`` in this process, Ctrl-C being the user's; how it ended.

    ``on_progress`` gets the job's status document at once, every PROGRESS_EVERY_S,
    and once more at the end; ``say`` gets one-line notes for the user. ``forks``: a
    fork server (``prsd.agent.forks``) the workers are forked from where they can be;
    it is served here (its caller closes it).
    """

    async def watch(leader: Leader) -> None:
        assert on_progress is not None
        await _report_progress(spool, job_id, on_progress)

    here = job_here(spool, job_id)
    end = await run_here(
        spool,
        here,
        options,
        say=say,
        interrupts=interrupts,
        forks=forks,
        watch=watch if on_progress is not None else None,
    )
    if isinstance(end, LeftEarly):
        return end
    if on_progress is not None:  # the view ends on the job's last counts
        on_progress(await anyio.to_thread.run_sync(read_job_status, spool, job_id))
    if end is not None:
        return end
    raw = await anyio.to_thread.run_sync(read_final, spool.job(job_id), MAX_FINAL_BYTES)
    return FinalState.from_json(raw)


def job_here(spool: SpoolLayout, job_id: str) -> Here:
    """One job, run here: its cancel is a request in ``requests/`` (as ``prsctl cancel``)."""

    def ask() -> Callable[[], None]:
        request = send_request(spool, job_id, "cancel")
        return partial(remove, spool, request.name)

    return Here(
        what=f"job {job_id}",
        serves=job_id,
        leads=frozenset({job_id}),
        final=spool.job(job_id).final,
        ask_cancel=ask,
        cancel_in=spool.requests,
        end_state=partial(_end_state, spool, job_id),
    )


async def follow_interruptible(
    spool: SpoolLayout,
    job_id: str,
    *,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> FinalState | LeftEarly:
    """Wait for ``job_id``, run by the spool's daemons, to end; Ctrl-C as in
    :func:`run_interruptible` (the first cancels the job and waits, a second leaves)."""
    final: FinalState | None = None
    here = job_here(spool, job_id)
    ctrl_c = CtrlC(here.what, here.ask_cancel, here.cancel_in, say)
    async with anyio.create_task_group() as outer:
        if on_progress is not None:
            outer.start_soon(_report_progress, spool, job_id, on_progress)
        outer.start_soon(ctrl_c.listen, outer.cancel_scope)
        final = await _wait_for_final(spool.job(job_id))
        if on_progress is not None:
            on_progress(await anyio.to_thread.run_sync(read_job_status, spool, job_id))
        outer.cancel_scope.cancel()
    if ctrl_c.left:
        return await anyio.to_thread.run_sync(ctrl_c.left_early, here.end_state)
    assert final is not None
    return final


async def _wait_for_final(layout: JobLayout) -> FinalState:
    """The job's final state, once its leader wrote it (looked for every FOLLOW_EVERY_S):
    the private record, with the reason, where this user may read it (the job's owner
    and its group), else the public one (the reason blanked)."""
    while True:
        doc = await anyio.to_thread.run_sync(read_final_document, layout)
        if doc is not None:
            return FinalState.from_obj(doc)
        await anyio.sleep(FOLLOW_EVERY_S)


def _end_state(spool: SpoolLayout, job_id: str) -> str:
    """The job's state once it has ended ("" before: it stays for a fleet)."""
    state = str(read_job_status(spool, job_id).get("state", ""))
    return state if spool.job(job_id).final.exists() else ""


async def _report_progress(
    spool: SpoolLayout, job_id: str, show: Callable[[dict[str, Any]], None]
) -> None:
    """The job's status document, read from the spool (whoever leads), at once and then
    every PROGRESS_EVERY_S."""
    while True:
        show(await anyio.to_thread.run_sync(read_job_status, spool, job_id))
        await anyio.sleep(PROGRESS_EVERY_S)
