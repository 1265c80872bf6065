"""Poison inputs: re-run a failed file-list mini-batch in halves until the culprits are found.

``bisect_failed_mini_batches: true`` (a prsd extension; Azure and its peers only say
that a mini-batch of 10 or 1000 files failed). When a file-list mini-batch with more
than one file fails for good (its retries used up), the leader runs its halves as
*probe* tasks, then the halves of each half that failed, until single failing
files remain. A failing group whose halves both succeed is reported whole: its
files fail only together (or the failure is not repeatable).

The mini-batch itself still counts as failed, exactly as without bisection, so
thresholds and the output do not change; the isolated inputs are listed (the
driver's ``poison_items``; ``user/error.txt``; the master log) so the user can
drop or fix them and run ``prsctl retry``.

Probes are ordinary task files holding the failed mini-batch's index with a subset
of its files, named with attempt numbers from :data:`PROBE_ATTEMPT_BASE` up: the
driver never counts them (their names are not outstanding in its book), and the
agents run them like any task (a retry reads their results apart from the job's own:
see :func:`prsd.leader.rerun.retryjob.is_probe`). Each probe runs once. A probe that does not come
back within :meth:`Bisector.probe_deadline_s` (its node died) ends that search
inconclusive, as does a leader take-over: bisection is diagnosis, never a reason
to hold a job.

The same hook, on or off, notes every mini-batch that failed for good or succeeded
short (its task file's payload) in :attr:`Bisector.failed_items`, the book behind
``logs/sys/failed_items.txt`` (:mod:`prsd.leader.end.faileditems`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prsd.errors import PrsdError
from prsd.jobspec.model import short_is_failure
from prsd.leader.end.faileditems import PARTIAL, FailedItemsBook
from prsd.spool.layout import PROBE_ATTEMPT_BASE, TaskName, parse_done_name
from prsd.spool.taskrecords import TaskBody
from prsd.wire.records import SUCCEEDED, MiniBatch

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from prsd.jobspec import JobSpec
    from prsd.leader.run.nextstep import Step
    from prsd.spool.jobfolder import JobFiles
    from prsd.wire.records import Outcome

Group = tuple[str, ...]


def halves(group: Group) -> tuple[Group, Group]:
    """Split a group of two or more inputs into two halves (the first one not smaller)."""
    mid = (len(group) + 1) // 2
    return group[:mid], group[mid:]


@dataclass
class Search:
    """One mini-batch's search, as pure state: what to run next, what is isolated.

    Every failing group of two or more is split; both halves run; when both are
    back, each failing half is split again, and a group whose halves both succeed
    is isolated whole.
    """

    index: int
    to_run: list[Group] = field(default_factory=list)
    isolated: list[tuple[Group, str]] = field(default_factory=list)  # (inputs, error)
    _open: dict[Group, tuple[Group, Group]] = field(default_factory=dict)
    _results: dict[Group, str | None] = field(default_factory=dict)  # error, None = ok
    _errors: dict[Group, str] = field(default_factory=dict)

    @classmethod
    def start(cls, index: int, items: list[str], error: str) -> Search:
        search = cls(index)
        search._failing(tuple(items), error)
        return search

    @property
    def done(self) -> bool:
        return not self._open and not self.to_run

    def take(self) -> list[Group]:
        """The groups to run now (each is handed out once)."""
        out, self.to_run = self.to_run, []
        return out

    def record(self, group: Group, error: str | None) -> None:
        """A probe's result: ``error`` is None when it succeeded."""
        self._results[group] = error
        for parent, (a, b) in list(self._open.items()):
            if a in self._results and b in self._results:
                del self._open[parent]
                ea, eb = self._results.pop(a), self._results.pop(b)
                if ea is None and eb is None:
                    self.isolated.append((parent, self._errors[parent]))
                if ea is not None:
                    self._failing(a, ea)
                if eb is not None:
                    self._failing(b, eb)

    def give_up(self, why: str) -> None:
        """Stop searching: every open group is reported whole, marked inconclusive."""
        for parent in list(self._open):
            self.isolated.append((parent, f"{self._errors[parent]} (search stopped: {why})"))
        self._open.clear()
        self._results.clear()
        self.to_run = []

    def _failing(self, group: Group, error: str) -> None:
        self._errors[group] = error
        if len(group) == 1:
            self.isolated.append((group, error))
            return
        a, b = halves(group)
        self._open[group] = (a, b)
        self.to_run += [a, b]


@dataclass(frozen=True)
class PoisonItems:
    """Inputs found to fail: one file, or a group that fails only together."""

    mini_batch: int
    items: tuple[str, ...]
    error: str

    @property
    def alone(self) -> bool:
        return len(self.items) == 1

    def __str__(self) -> str:
        """One line for ``user/error.txt``: the input(s), the mini-batch, the error."""
        what = self.items[0] if self.alone else f"{', '.join(self.items)} (only together)"
        return f"{what} (mini-batch {self.mini_batch:09d}): {self.error}"


@dataclass
class _Probe:
    index: int
    group: Group
    written_at: float


class Bisector:
    """Runs the searches of one job: writes probe tasks and reads their results."""

    def __init__(
        self,
        folder: JobFiles,
        spec: JobSpec,
        *,
        kind: str,
        epoch: int,
        log: Callable[[str], None],
        durable: bool = True,
    ) -> None:
        self.folder = folder
        self.layout = folder.layout
        self.enabled = spec.bisect_failed_mini_batches and kind == "files"
        self.kind = kind
        self.epoch = epoch
        self.log = log
        self.durable = durable
        self.probe_deadline_s = 3.0 * (spec.timeout_s + spec.task_overhead_timeout_s) + 60.0
        self.searches: dict[int, Search] = {}
        self.isolated: list[PoisonItems] = []
        self._probes: dict[str, _Probe] = {}
        self._attempts = itertools.count(PROBE_ATTEMPT_BASE)
        self._keys: dict[int, MiniBatch] = {}
        self.failed_items = FailedItemsBook()
        # Short results are failures of the output under append_row, or where the
        # thresholds count them (item_error_threshold); summary_only counts only.
        self.note_short = short_is_failure(spec)

    @property
    def busy(self) -> bool:
        """A search is still running (the job waits for it before it completes)."""
        return bool(self.searches)

    def after(self, step: Step, outcome: Outcome, task_file: Path, resuming: bool = False) -> None:
        """Hook after each attempt: note a failed or short mini-batch; start a search
        when a file list failed for good.

        Not while a new leader re-reads the results of an earlier one (``resuming``):
        a search is not resumed after a take-over (the failed items are still noted).
        """
        if not step.final:
            return
        short = self.note_short and step.succeeded and outcome.succeeded_items < outcome.items
        if step.succeeded and not short:
            return
        mb = _mini_batch_of(self.folder, task_file, outcome.index)
        if mb is None:
            return
        if short:
            why = f"run() returned {outcome.succeeded_items} of {outcome.items} elements"
            self.failed_items.add(mb.index, mb.payload, mb.key, PARTIAL, why)
            return
        error = outcome.error or outcome.status
        self.failed_items.add(mb.index, mb.payload, mb.key, outcome.status, error)
        if not self.enabled or resuming or outcome.index in self.searches:
            return
        if not isinstance(mb.payload, list) or len(mb.payload) < 2:
            return
        self._keys[mb.index] = mb
        self.searches[mb.index] = Search.start(mb.index, [str(p) for p in mb.payload], error)
        self.log(f"bisect: mini-batch {mb.index:09d} ({len(mb.payload)} inputs) failed: {error}")

    def step(self, now: float) -> bool:
        """Write new probes, read finished ones; True if any probe finished."""
        if not self.searches:
            return False
        moved = self._collect(now)
        for search in list(self.searches.values()):
            for group in search.take():
                self._write(search.index, group, now)
            if search.done:
                self._finish(search)
        return moved

    def _write(self, index: int, group: Group, now: float) -> None:
        base = self._keys[index]
        task = TaskName(index, next(self._attempts), self.epoch)
        mb = MiniBatch(index, list(group), len(group), base.key)
        self.folder.make_shard(task.shard)
        body = TaskBody(self.layout.job_id, self.kind, (mb,))
        self.folder.write_task(task, body, durable=self.durable)
        self._probes[task.name] = _Probe(index, group, now)

    def _collect(self, now: float) -> bool:
        moved = False
        for name, node in self._done_probes():
            probe = self._probes.pop(name)
            error = self._probe_error(TaskName.parse(name), node, probe.index)
            search = self.searches.get(probe.index)
            if search is not None:
                search.record(probe.group, error)
                moved = True
        self._rerun_returned(now)
        for name, probe in list(self._probes.items()):
            if now - probe.written_at > self.probe_deadline_s:
                del self._probes[name]
                search = self.searches.get(probe.index)
                if search is not None:
                    search.give_up(f"probe {name} did not come back")
        return moved

    def _done_probes(self) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        shards = {TaskName(p.index, 0, 0).shard for p in self._probes.values()}
        for shard in shards:
            for entry in self.folder.done_names(shard):
                parsed = parse_done_name(entry)
                if parsed is not None and parsed[0].name in self._probes:
                    found.append((parsed[0].name, parsed[1]))
        return found

    def _probe_error(self, task: TaskName | None, node: str, index: int) -> str | None:
        found = self.folder.read_result(task, node) if task else None
        meta = found.meta if found is not None else None
        outcome = next((o for o in meta.outcomes if o.index == index), None) if meta else None
        if outcome is None:
            return "the probe did not run"
        if outcome.status == SUCCEEDED:
            return None
        return outcome.error or outcome.status

    def _rerun_returned(self, now: float) -> None:
        """A probe handed back by a draining node runs again under a new name."""
        for name in list(self._probes):
            src = self.layout.returned / name
            if not src.exists():
                continue
            probe = self._probes.pop(name)
            old = TaskName.parse(name)
            assert old is not None
            new = TaskName(old.first_mb, next(self._attempts), self.epoch)
            if self.folder.requeue(src, new):
                self._probes[new.name] = _Probe(probe.index, probe.group, now)

    def _finish(self, search: Search) -> None:
        del self.searches[search.index]
        for items, error in sorted(search.isolated):
            found = PoisonItems(search.index, items, error)
            self.isolated.append(found)
            how = "fails alone" if found.alone else f"{len(items)} inputs fail only together"
            self.log(f"bisect: mini-batch {search.index:09d}: {', '.join(items)} {how}: {error}")


def _mini_batch_of(folder: JobFiles, task_file: Path, index: int) -> MiniBatch | None:
    """Mini-batch ``index`` as the task file planned it; None if the file is unreadable."""
    try:
        body = folder.read_task(task_file)
    except (OSError, ValueError, PrsdError):
        return None
    return next((m for m in body.mini_batches if m.index == index), None)
