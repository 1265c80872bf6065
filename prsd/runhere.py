"""``prsd run``'s engine: a leader and an agent in this process until a job or a pipeline ends.

:func:`run_here` serves a job (:mod:`prsd.embedded`) and a pipeline
(:mod:`prsd.pipelinerun`) alike. It runs the same Leader and Agent the daemons run,
limited to what :class:`Here` names, wired in one process: each commit of the agent is
a hint to the leader and rings its bell, and the leader rings the agent's. One lease
loop leads: on a spool of its own it takes the lease at once (no earlier leader, or one
known dead on this host); where a daemon holds the lease, it says so and serves as one
more node, and takes over only if that leader's lease lapses; a deposed term drops its
drivers and tries again. It returns once ``Here.final`` is written and the agent's runs
have stopped (their workers at their own pace).

With ``interrupts``, Ctrl-C is the user's (:class:`prsd.ctrlc.CtrlC`): the first asks for the
cancel (``Here.ask_cancel``, as ``prsctl cancel`` does) and waits for the end as
above; a second leaves at once (:class:`~prsd.ctrlc.LeftEarly`), withdrawing a cancel no leader
acted on, so what has not ended stays in the spool for a fleet.

Errors: a job's faults end that job at its boundary in the leader and the agent; any
other exception of either propagates out of :func:`run_here`. A cancel that cannot be
asked (an ``OSError``) is said, and a second Ctrl-C still leaves.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from prsd.agent.agent import Agent
from prsd.ctrlc import CtrlC, LeftEarly
from prsd.leader.election import Deposed, Election
from prsd.leader.leader import Leader, LeaderLinks
from prsd.leader.run.job import Hint

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from pathlib import Path

    from prsd.agent.agent import AgentOptions
    from prsd.agent.forks import ForkServer
    from prsd.leader.end.finish import FinalState
    from prsd.spool.layout import SpoolLayout, TaskName

END_POLL_S = 0.2  # the end written by a leader elsewhere is looked for this often


@dataclass(frozen=True)
class Here:
    """What one ``prsd run`` leads and serves in this process, and how it ends."""

    what: str  # "job <id>", "pipeline <id>": for the user's lines
    serves: str | frozenset[str]  # the agent's jobs: one job's id, or a pipeline's steps
    leads: frozenset[str]  # the leader's: the same, and a pipeline's own id
    final: Path  # written once it has ended
    ask_cancel: Callable[[], Callable[[], None]]  # the first Ctrl-C; returns the withdrawal
    cancel_in: Path  # the folder the cancel is asked in, for an error line
    end_state: Callable[[], str]  # (in a thread) its end state, "" while it has not ended

    @property
    def one_job(self) -> str | None:
        """The job whose end ends the run, where it is one job."""
        return self.serves if isinstance(self.serves, str) else None


async def run_here(
    spool: SpoolLayout,
    here: Here,
    options: AgentOptions,
    *,
    say: Callable[[str], None] | None = None,
    interrupts: bool = True,
    forks: ForkServer | None = None,
    watch: Callable[[Leader], Coroutine[Any, Any, None]] | None = None,
) -> FinalState | LeftEarly | None:
    """Lead and serve ``here`` in this process until it has ended.

    Returns the one job's final state where this process's leader ended it, None where
    it ended otherwise (``here.final`` says how), or :class:`LeftEarly`. ``say`` gets
    one-line notes for the user; ``forks``: a fork server the workers are forked from
    where they can be, served here (its caller closes it); ``watch`` runs beside until
    the end (the progress view).
    """
    links = LeaderLinks()

    def on_commit(committed_job: str, task: TaskName) -> None:
        links.hints.append(Hint(committed_job, task, options.node_id))
        links.leader_bell.ring()

    election = Election(spool, one_job=True)
    if here.one_job is not None:
        leader = Leader(spool, election=election, links=links, only_job=here.one_job)
    else:
        leader = Leader(spool, election=election, links=links, only_jobs=here.leads)
    agent = Agent(
        spool,
        options,
        bell=links.agent_bell,
        on_commit=on_commit,
        only_job=here.serves,
        forks=forks,
    )
    ctrl_c = CtrlC(here.what, here.ask_cancel, here.cancel_in, say)
    end = _End()
    async with anyio.create_task_group() as outer:
        if forks is not None:
            outer.start_soon(forks.serve)
        if watch is not None:
            outer.start_soon(watch, leader)
        if interrupts:
            outer.start_soon(ctrl_c.listen, outer.cancel_scope)
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(agent.run, until_job=here.one_job))
            tg.start_soon(_lead, leader, here, end, say)
            await end.wait(here.final)
            agent.job_ended()  # its runs end as their jobs have
            if here.one_job is None:  # the agent and the leader's term would serve on
                for running in list(agent.runs.values()):
                    await running.done.wait()  # their workers stopped at their own pace
                tg.cancel_scope.cancel()
            # One job: the agent returns once its run here has stopped, the lease loop
            # once the job has ended.
        outer.cancel_scope.cancel()
    if ctrl_c.left:
        return await anyio.to_thread.run_sync(ctrl_c.left_early, here.end_state)
    return end.final


class _End:
    """The end of what runs here: the lease loop's (the one job ended by this leader)
    or ``final`` written by a leader elsewhere."""

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.final: FinalState | None = None

    def set(self, final: FinalState | None) -> None:
        self.final = final
        self.event.set()

    async def wait(self, final: Path) -> None:
        while not self.event.is_set():
            if await anyio.to_thread.run_sync(final.exists):
                return
            with anyio.move_on_after(END_POLL_S):
                await self.event.wait()


async def _lead(leader: Leader, here: Here, end: _End, say: Callable[[str], None] | None) -> None:
    """Lead while this process holds the lease, or wait while a leader daemon of the same
    spool leads; returns once the one job ended here (a pipeline's term runs until the
    run is cancelled at its end)."""
    election = leader.election
    patient = False  # a spool of its own: the lease at once
    while not await anyio.to_thread.run_sync(here.final.exists):
        epoch = await anyio.to_thread.run_sync(
            partial(election.try_once, anyio.current_time(), patient=patient)
        )
        if not patient and not epoch and say is not None:
            say(
                f"another leader holds this spool's lease: {here.what} waits for it (a leader "
                "daemon leads it; a second `prsd run` takes over when the first ends)"
            )
        patient = True
        if epoch:
            try:
                final = await leader.lead(until_job=here.one_job)
            except Deposed:
                leader.drivers.clear()
                continue
            end.set(final)
            return
        await anyio.sleep(election.beat_s / 2)
