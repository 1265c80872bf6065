"""``prsd run``: the leader and one local agent in one process, until the job ends.

It is the same Leader and Agent code the daemons run; in one process they also ring
each other's doorbells and pass commit hints, which only saves polling latency.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from prsd.agent.agent import Agent, AgentOptions
from prsd.leader.election import Deposed, Election
from prsd.leader.finish import FinalState
from prsd.leader.job import Hint
from prsd.leader.leader import Leader, LeaderLinks

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.storage.layout import SpoolLayout, TaskName

PROGRESS_EVERY_S = 5.0


async def run_until_done(
    spool: SpoolLayout,
    job_id: str,
    options: AgentOptions,
    *,
    on_progress: Callable[[str], None] | None = None,
) -> FinalState:
    """Lead and serve ``job_id`` in this process; returns how it ended."""
    links = LeaderLinks()

    def on_commit(committed_job: str, task: TaskName) -> None:
        links.hints.append(Hint(committed_job, task, options.node_id))
        links.leader_bell.ring()

    leader = Leader(spool, election=Election(spool), links=links, only_job=job_id)
    agent = Agent(spool, options, bell=links.agent_bell, on_commit=on_commit, only_job=job_id)
    final: FinalState | None = None
    async with anyio.create_task_group() as outer:
        if on_progress is not None:
            outer.start_soon(_report_progress, leader, job_id, on_progress)
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: agent.run(until_job=job_id))
            final = await _lead_until_done(leader, job_id, on_progress)
            agent.job_ended()
        outer.cancel_scope.cancel()
    assert final is not None
    return final


async def _lead_until_done(
    leader: Leader, job_id: str, say: Callable[[str], None] | None
) -> FinalState:
    """Lead the job, or wait while a leader daemon of the same spool leads it.

    On a spool of its own, ``prsd run`` takes the lease at once (no earlier leader, or
    it is known dead on this host). Where a daemon holds the lease, this process
    serves the job as one more node, and takes over only if that leader's lease lapses.
    """
    election = leader.election
    final_path = leader.spool.job(job_id).final
    patient = False
    while True:
        if await anyio.to_thread.run_sync(final_path.exists):
            return FinalState.from_json(final_path.read_bytes())
        epoch = await anyio.to_thread.run_sync(
            partial(election.try_once, anyio.current_time(), patient=patient)
        )
        if not patient and not epoch and say is not None:
            say(
                "another leader holds this spool's lease: the job waits for it (a leader "
                "daemon leads it; a second `prsd run` takes over when the first ends)"
            )
        patient = True
        if epoch:
            try:
                final = await leader.lead(until_job=job_id)
            except Deposed:
                leader.drivers.clear()
                continue
            assert final is not None
            return final
        await anyio.sleep(election.beat_s / 2)


async def _report_progress(leader: Leader, job_id: str, say: Callable[[str], None]) -> None:
    while True:
        await anyio.sleep(PROGRESS_EVERY_S)
        driver = leader.drivers.get(job_id)
        if driver is not None:
            say(driver.progress_line(anyio.current_time()))
