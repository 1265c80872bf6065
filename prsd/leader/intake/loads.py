"""Specs of jobs being taken in, loaded beside the leader's round: :class:`IntakeLoads`.

Promise: the leader's round never waits for a job's spec to load. The round seals a
job just taken in (the spool's own files, quick), hands the load to this pool and goes
on with every other job, the lease and the nodes; a later round collects the outcome
(:meth:`IntakeLoads.ready`) and records the spec or fails the job. At most ``limit``
specs load at once (``PRSD_INTAKE_LOADS``, :func:`prsd.tunables.intake_loads`); the
jobs beyond wait their turn in the order they were taken in. A load is the owner's
helper process (prsd/leader/intake/specowner.py), killed after ``PRSD_SPEC_LOAD_TIMEOUT_S``;
a load that has not ended a few seconds after that limit (one in this process, for a
root-owned job or a daemon that is not root; a helper that sleeps in a hung mount,
which no signal ends) is given up: its job fails with the same reason and the thread
is left to end on its own.

Only the round calls :meth:`start`, :meth:`ready` and :meth:`forget` (one thread);
each load runs in a daemon thread of its own and writes nothing: the round records
each spec. A given-up load no longer holds a place.

Errors: a load's exception is its job's outcome, handed back by :meth:`ready`, never
raised here.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prsd.errors import InputError
from prsd.leader.intake.specowner import load_as_owner
from prsd.logconfig import get_logger
from prsd.tunables import intake_loads, spec_load_timeout_s

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.jobspec import JobSpec
    from prsd.spool.jobowner import JobOwner
    from prsd.spool.layout import JobLayout

log = get_logger("prsd.leader")

GIVE_UP_AFTER_S = 15.0
"""Beyond the load time limit, how long an in-process load may still take."""


@dataclass
class Loading:
    """One job whose spec is being loaded."""

    layout: JobLayout
    owner: JobOwner
    future: Future[JobSpec] = field(default_factory=Future)
    started: float = 0.0  # time.monotonic() when its load began (0: waiting its turn)
    given_up: InputError | None = None

    def spec(self) -> JobSpec:
        """The loaded spec (the load has ended).

        Raises:
            Exception: what the load raised (:class:`InputError` if it was given up).
        """
        if self.given_up is not None:
            raise self.given_up
        return self.future.result()


class IntakeLoads:
    """The leader's loads in progress, at most ``limit`` at once (see the module doc)."""

    def __init__(
        self,
        limit: int | None = None,
        wake: Callable[[], None] | None = None,
        load: Callable[[JobLayout], JobSpec] = load_as_owner,
        grace_s: float = GIVE_UP_AFTER_S,
    ) -> None:
        self.limit = intake_loads() if limit is None else max(1, limit)
        self.grace_s = grace_s  # past the load time limit, before a load is given up
        self.wake = wake  # called (from a load's thread) when a load ends
        self._load = load
        self.loading: dict[str, Loading] = {}  # in the order taken in

    def __contains__(self, job_id: object) -> bool:
        return job_id in self.loading

    def __len__(self) -> int:
        return len(self.loading)

    def start(self, layout: JobLayout, owner: JobOwner) -> None:
        """Load the spec of the sealed job ``layout`` (owned by ``owner``) in a thread of
        its own, now or when one of the ``limit`` places is free."""
        self.loading[layout.job_id] = Loading(layout, owner)
        self._launch()

    def _launch(self) -> None:
        running = sum(1 for i in self.loading.values() if i.started and not i.future.done())
        for item in self.loading.values():
            if running >= self.limit:
                return
            if item.started:
                continue
            item.started = time.monotonic()
            name = f"prsd-intake-{item.layout.job_id}"
            threading.Thread(target=self._run, args=(item,), name=name, daemon=True).start()
            running += 1
            log.info("loading the job's spec", job_id=item.layout.job_id, at_once=self.limit)

    def _run(self, item: Loading) -> None:
        """(In the load's thread.) Load, keep the outcome, wake the round."""
        try:
            item.future.set_result(self._load(item.layout))
        except BaseException as exc:  # noqa: BLE001 - the job's outcome, handed to the round
            item.future.set_exception(exc)
        if self.wake is not None:
            try:
                self.wake()
            except Exception as exc:  # noqa: BLE001 - a courtesy: the round ticks anyway
                log.debug("no wake-up after a spec load", error=str(exc))

    def ready(self) -> list[Loading]:
        """The loads that ended (or were given up) since the last call, in the order their
        jobs were taken in (:meth:`Loading.spec` says how); they are no longer loading,
        and the jobs waiting their turn start in the places they leave."""
        limit = spec_load_timeout_s() + self.grace_s
        now = time.monotonic()
        out: list[Loading] = []
        for job_id, item in list(self.loading.items()):
            if item.started and not item.future.done() and now - item.started > limit:
                item.given_up = _given_up(limit)  # its thread is left to end on its own
            elif not item.future.done():
                continue
            out.append(item)
            del self.loading[job_id]
        if out:
            self._launch()
        return out

    def forget(self) -> None:
        """Drop every load (the leader was deposed or takes office again): outcomes are
        never collected, the jobs are taken in again from the spool; threads still
        loading end on their own."""
        self.loading.clear()


def _given_up(limit: float) -> InputError:
    return InputError(
        f"the spec of this job did not load within {limit:g} s (is an input path on a "
        "slow or hung mount?)"
    )
