"""``prsd run``: the leader and one local agent in one process, until the job ends.

It is the same Leader and Agent code the daemons run; in one process they also ring
each other's doorbells and pass commit hints, which only saves polling latency.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from prsd.agent.agent import Agent, AgentOptions
from prsd.leader.job import Hint
from prsd.leader.leader import Leader, LeaderLinks

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.leader.finish import FinalState
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

    leader = Leader(spool, links=links)
    agent = Agent(spool, options, bell=links.agent_bell, on_commit=on_commit)
    final: FinalState | None = None
    async with anyio.create_task_group() as outer:
        if on_progress is not None:
            outer.start_soon(_report_progress, leader, job_id, on_progress)
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: agent.run(until_job=job_id))
            final = await leader.run(until_job=job_id)
            links.agent_bell.ring()
        outer.cancel_scope.cancel()
    assert final is not None
    return final


async def _report_progress(leader: Leader, job_id: str, say: Callable[[str], None]) -> None:
    while True:
        await anyio.sleep(PROGRESS_EVERY_S)
        driver = leader.drivers.get(job_id)
        if driver is not None:
            say(driver.progress_line(anyio.current_time()))
