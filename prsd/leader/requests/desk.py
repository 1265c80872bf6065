"""The leader's request desk: read ``requests/``, check who asked, act, answer, tidy.

Invariant: a request is acted on only by the leader that drives its job, and only
when :func:`prsd.leader.requests.askrule.decide` allows it: the request file's owner (the uid
that asked, read by descriptor) is the job's owner, root, or in ``PRSD_ADMIN_GROUP``.
The job's owner comes from :func:`prsd.spool.askers.job_owner`. A ``remove``
(``prsctl gc``) deletes an ended job's folder (:mod:`prsd.leader.requests.removal`); a
running or queued job is never removed. Each request is answered once (``<name>.reply``) and removed;
a request for a job not driven yet (still in the inbox) waits for its intake. Replies
and strays are removed ``REPLY_KEEP_S`` after this leader first saw them (its own
clock: no file time from another machine is compared).

Errors: a request that is not a plain small file with a matching body is answered
with the reason and removed; nothing a user writes here can stop the leader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prsd.leader.intake.refusedgc import discard_refused
from prsd.leader.requests.askrule import Decision, JobPlace, Verb, decide
from prsd.leader.requests.removal import remove_ended_job, sweep_aside
from prsd.logconfig import get_logger
from prsd.spool.askers import admin_group_from_env, in_group, job_owner, person
from prsd.spool.finalrecord import read_final_state
from prsd.spool.requests import (
    Received,
    Reply,
    RequestError,
    pending_names,
    read_request,
    remove,
    write_reply,
)
from prsd.spool.states import JobState

if TYPE_CHECKING:
    from prsd.leader.end.finish import FinalState
    from prsd.leader.run.job import JobDriver
    from prsd.spool.layout import SpoolLayout

log = get_logger("prsd.leader")

CHECK_S = 0.5  # how often requests/ is listed: a cancel acts within about this
MAX_PER_STEP = 64  # a flood of requests cannot stall a round
REPLY_KEEP_S = 600.0  # replies stay this long for prsctl to read


def take_turn(names: list[str], cursor: int, limit: int) -> tuple[list[str], int]:
    """At most ``limit`` names from ``cursor`` on (wrapping), and the next cursor.

    Requests left waiting (a queued job's, however many) can never keep later ones
    from being read: every name is read within ``len(names) / limit`` steps.
    """
    if len(names) <= limit:
        return names, 0
    start = cursor % len(names)
    return (names[start:] + names[:start])[:limit], start + limit


class RequestDesk:
    """Serves ``requests/`` for the jobs one leader drives (``only_job``: that job only)."""

    def __init__(
        self, spool: SpoolLayout, *, only_job: str | None = None, admin_group: str | None = None
    ) -> None:
        self.spool = spool
        self.only_job = only_job
        self.admin_group = admin_group_from_env() if admin_group is None else admin_group
        self._last_check = -1e9
        self._seen: dict[str, float] = {}  # reply or stray -> when this leader first saw it
        self._cursor = 0
        self._stuck: set[str] = set()  # requests this leader could neither answer nor remove

    def step(
        self, now: float, drivers: dict[str, JobDriver], finished: dict[str, FinalState]
    ) -> None:
        """Answer the pending requests (at most MAX_PER_STEP) and tidy old replies."""
        if now - self._last_check < CHECK_S:
            return
        if self._last_check < 0 and self.only_job is None:
            sweep_aside(self.spool)  # removals a dead leader left half done
        self._last_check = now
        names, others = pending_names(self.spool)
        self._stuck &= set(names)
        for name in self._turn([n for n in names if n not in self._stuck]):
            try:
                self._serve(name, now, drivers, finished)
            except OSError as exc:
                log.warning("cannot answer a request", request=name, error=str(exc))
                self._stuck.add(name)  # logged once, not at every step
        self._tidy(others, now)

    def _turn(self, names: list[str]) -> list[str]:
        batch, self._cursor = take_turn(names, self._cursor, MAX_PER_STEP)
        return batch

    def _serve(
        self, name: str, now: float, drivers: dict[str, JobDriver], finished: dict[str, FinalState]
    ) -> None:
        job_id = name.split(".", 1)[0]
        if self.only_job is not None and job_id != self.only_job:
            return  # another leader's job (``prsd run`` serves one job)
        try:
            got = read_request(self.spool, name)
        except FileNotFoundError:
            return
        except RequestError as exc:
            log.warning("refused a malformed request", error=exc.one_line())
            self._answer(name, False, exc.one_line())
            return
        if got.request.action == "discard":  # prsctl gc of a refused inbox folder
            admin = got.uid == 0 or in_group(got.uid, self.admin_group)
            self._answer(name, *discard_refused(self.spool.refused, job_id, got.uid, admin))
            return
        place, ended = self._place(job_id, drivers, finished)
        decision = decide(
            job_id,
            got.request.action,
            place,
            asker=person(got.uid),
            owner=job_owner(self.spool, job_id),
            asker_is_admin=in_group(got.uid, self.admin_group),
            ended_state=ended,
            admin_group=self.admin_group,
        )
        if decision.verb is Verb.KEEP:
            return
        if decision.verb is Verb.ACT and got.request.action == "remove":
            ok, message = remove_ended_job(self.spool, job_id)
            if ok:
                finished.pop(job_id, None)
                log.info(
                    "request accepted", job_id=job_id, action="remove", by=str(person(got.uid))
                )
            self._answer(name, ok, message)
            return
        driver = drivers.get(job_id)
        if decision.verb is Verb.ACT and driver is not None:
            self._act(driver, got, decision, now)
        elif driver is not None and not decision.ok:
            driver.logs.master(f"refused: {got.request.action} asked by {person(got.uid)}")
        message = decision.message
        if decision.verb is Verb.ACT:
            message = f"job {job_id}: {message}"
        self._answer(name, decision.ok, message)

    def _act(self, driver: JobDriver, got: Received, decision: Decision, now: float) -> None:
        asker = person(got.uid)
        driver.logs.master(f"{got.request.action} requested by {asker}")
        log.info("request accepted", job_id=driver.job_id, action=got.request.action, by=str(asker))
        driver.finish(JobState.CANCELED, f"{decision.message}.", now)

    def _answer(self, name: str, ok: bool, message: str) -> None:
        """Reply, then remove the request (even when the reply could not be written:
        the work is done, and the user sees the outcome in ``prsctl status``).

        Raises:
            OSError: the request could not be removed.
        """
        try:
            write_reply(self.spool, name, Reply(ok, message))
        except OSError as exc:
            log.warning("cannot write a reply", request=name, error=str(exc))
        remove(self.spool, name)

    def _place(
        self, job_id: str, drivers: dict[str, JobDriver], finished: dict[str, FinalState]
    ) -> tuple[JobPlace, str]:
        if job_id in drivers:
            return JobPlace.DRIVEN, ""
        if job_id in finished:
            return JobPlace.ENDED, finished[job_id].state
        layout = self.spool.job(job_id)
        try:
            return JobPlace.ENDED, read_final_state(layout).state
        except FileNotFoundError:
            pass
        except (OSError, ValueError, TypeError):
            return JobPlace.ENDED, "ended (its final state cannot be read)"
        if layout.root.is_dir() or self.spool.queued(job_id).is_dir():
            return JobPlace.WAITING, ""
        return JobPlace.UNKNOWN, ""

    def _tidy(self, others: list[str], now: float) -> None:
        present = set(others)
        for name in list(self._seen):
            if name not in present:
                del self._seen[name]
        for name in others:
            first = self._seen.setdefault(name, now)
            if now - first >= REPLY_KEEP_S:
                remove(self.spool, name)
                del self._seen[name]
