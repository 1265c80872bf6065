"""``prsd run`` of a job: lead and serve it in this process, or follow the daemons that do.

:func:`run_interruptible` runs the job here with :func:`prsd.runhere.run_here` (the same
Leader and Agent the daemons run, in one process; Ctrl-C as it says: the first asks
the leader to cancel the job, a request in ``requests/`` as ``prsctl cancel`` sends,
and waits; a second leaves at once, withdrawing a cancel no leader answered, so a job
not yet ended stays in the spool for any leader and agents serving it).

:func:`prsd.follow.follow_interruptible` (re-exported here) is the same wait where
daemons serve the spool and run the job (``prsd run`` handed it to them): progress,
Ctrl-C and the end alike, with no leader or agent in this process (``prsd run`` imports
it from :mod:`prsd.follow`, which loads neither).

Errors: as :func:`~prsd.runhere.run_here`; a ``final.json`` that is not the daemons'
own raises :class:`~prsd.errors.UntrustedFile`.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from prsd.ctrlc import LeftEarly
from prsd.follow import cancel_asker, end_state, follow_interruptible, report_progress
from prsd.read.jobs import read_job_status
from prsd.runhere import Here, run_here
from prsd.spool.finalrecord import FinalState
from prsd.spool.privaterecords import read_final

MAX_FINAL_BYTES = 1 << 20

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.agent.agent import AgentOptions
    from prsd.agent.forks import ForkServer
    from prsd.leader.leader import Leader
    from prsd.spool.layout import SpoolLayout

__all__ = ["LeftEarly", "follow_interruptible", "run_interruptible", "run_until_done"]


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

    ``on_progress`` gets the job's status document at once, every
    ``prsd.follow.PROGRESS_EVERY_S``,
    and once more at the end; ``say`` gets one-line notes for the user. ``forks``: a
    fork server (``prsd.agent.forks``) the workers are forked from where they can be;
    it is served here (its caller closes it).
    """

    async def watch(leader: Leader) -> None:
        assert on_progress is not None
        await report_progress(spool, job_id, on_progress)

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
    return Here(
        what=f"job {job_id}",
        serves=job_id,
        leads=frozenset({job_id}),
        final=spool.job(job_id).final,
        ask_cancel=cancel_asker(spool, job_id),
        cancel_in=spool.requests,
        end_state=partial(end_state, spool, job_id),
    )
