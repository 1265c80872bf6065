"""The leader's side of task files: writing them, and knowing which are outstanding.

Invariant: the leader is the only writer of ``pending/``; every task it writes (or
adopts when it takes a job over) is *outstanding* until its commit is ingested or it
is requeued under a new name. A done file for a name that is not outstanding is
either already ingested (a second node committing it is the duplicate-commit
tripwire) or unknown (a deposed leader's late write), and is never used.

The files themselves are written and read through the job's folder
(:class:`prsd.spool.jobfolder.JobFiles`: the spool, or memory in a test). A durable
task file is flushed before its rename into ``pending/`` (no agent can claim a file
whose content a machine crash would lose); the tasks written in one
:meth:`TaskTable.batch` (a step's retries and split) share one flush of each
``pending/<shard>`` folder after the last rename, even when a write fails: until it,
a machine crash may lose a new name (not its content), and a take-over plans the
mini-batches of a name it does not find again.
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.errors import SpoolError
from prsd.spool.layout import TaskName
from prsd.spool.pendinghint import HintWriter
from prsd.spool.taskrecords import TaskBody
from prsd.wire.fields import RecordError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from prsd.spool.jobfolder import JobFiles
    from prsd.wire.records import MiniBatch


@dataclass(frozen=True)
class OutTask:
    """A task the leader wrote and has not yet settled."""

    task: TaskName
    indices: tuple[int, ...]


class TaskTable:
    """Writes task files and tracks the outstanding ones per shard."""

    def __init__(
        self,
        folder: JobFiles,
        kind: str,
        epoch: int,
        *,
        durable: bool,
        on_issue: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.folder = folder
        self.layout = layout = folder.layout
        self.on_issue = on_issue or (lambda names: None)
        self.kind = kind
        self.epoch = epoch
        self.durable = durable
        self.outstanding: dict[str, OutTask] = {}
        self.ingested: dict[str, str] = {}  # task name -> node that committed it
        self._per_shard: Counter[str] = Counter()
        self._shards_made: set[str] = set()
        self.written = 0
        self.hint = HintWriter(layout)
        self._unsynced: set[str] | None = None  # in a batch: shards whose folder is owed

    def __len__(self) -> int:
        return len(self.outstanding)

    def write(self, mbs: list[MiniBatch], attempt: int) -> OutTask:
        """Write one task file holding ``mbs`` (all at ``attempt``) into ``pending/``.

        Raises:
            OSError: the spool is not writable; nothing is recorded.
        """
        task = TaskName(mbs[0].index, attempt, self.epoch)
        self.ensure_shard(task.shard)
        body = TaskBody(self.layout.job_id, self.kind, tuple(mbs))
        owed = self._unsynced
        if owed is None or not self.durable:
            self.folder.write_task(task, body, durable=self.durable)
        else:
            self.folder.write_task(task, body, durable=True, sync_folder=False)
            owed.add(task.shard)
        self.on_issue([task.name])
        out = OutTask(task, tuple(mb.index for mb in mbs))
        self.adopt(out)
        self.written += 1
        return out

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Task files written inside share one flush of each ``pending/<shard>`` folder,
        at the end (see the module); not nested.

        Raises:
            OSError: a folder cannot be flushed (after every task written was counted).
        """
        assert self._unsynced is None, "TaskTable.batch is not nested"
        owed = self._unsynced = set()
        try:
            yield
        finally:
            self._unsynced = None
            self.folder.sync_pending(sorted(owed))

    def adopt(self, out: OutTask) -> None:
        """Count a task as outstanding (written here, requeued, or found at takeover)."""
        self.outstanding[out.task.name] = out
        self._per_shard[out.task.shard] += 1

    def settle(self, name: str, node_id: str) -> OutTask:
        """The task's commit by ``node_id`` has been ingested."""
        out = self.outstanding.pop(name)
        self._settled(out)
        self.ingested[name] = node_id
        return out

    def drop(self, name: str) -> OutTask:
        """The task was requeued under a new name."""
        out = self.outstanding.pop(name)
        self._settled(out)
        return out

    def _settled(self, out: OutTask) -> None:
        self._per_shard[out.task.shard] -= 1
        if self._per_shard[out.task.shard] <= 0:
            del self._per_shard[out.task.shard]

    def publish_hint(self, now: float) -> None:
        """Name the outstanding tasks in ``tasks/pending.names`` for agents whose listing
        of ``pending/`` is stale (prsd.spool.pendinghint), when they changed."""
        self.hint.publish(self.outstanding, now)

    def active_shards(self) -> list[str]:
        """Shards that hold outstanding tasks (the only done/ folders worth listing)."""
        return sorted(self._per_shard)

    def ensure_shard(self, shard: str) -> None:
        if shard in self._shards_made:
            return
        self.folder.make_shard(shard)
        self._shards_made.add(shard)

    def read_body(self, path: Path) -> dict[int, MiniBatch]:
        """The mini-batches of a task file (done or claimed), by index.

        Raises:
            SpoolError: not a task file.
            OSError: it cannot be read.
        """
        try:
            body = self.folder.read_task(path)
        except RecordError as exc:
            raise SpoolError(f"unreadable task file {path.name}: {exc}") from exc
        return {mb.index: mb for mb in body.mini_batches}


def contiguous_runs(indices: list[int]) -> list[list[int]]:
    """Split sorted indices into runs of consecutive numbers: [1,2,3,7,8] -> [[1,2,3],[7,8]]."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and runs[-1][-1] + 1 == i:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs
