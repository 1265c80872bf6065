"""Where everything lives in the spool: pure functions from ids to paths and back.

Invariant: every name a daemon derives from an untrusted string (job name, node id,
task name) goes through a validator here first, so no derived path can contain
``..``, a slash, a control character or a leading dot. Task names carry identity and
order: ``000000042.a3.e2`` is mini-batch 42 (the first of the task), attempt 3,
written by leader epoch 2; a lexical sort of a directory gives input order.

Every name of the spool is spelled here, and only here: other modules take their
paths from a :class:`SpoolLayout`, :class:`JobLayout` or
:class:`~prsd.spool.pipelinelayout.PipelineLayout` (a pipeline's folder, beside)
(tests/unit/test_spool_paths.py fails on a spool name joined by hand elsewhere). The
one exception is ``logs/``, whose tree :class:`prsd.wire.logtree.LogTree` names for the
worker side too.

Layout (docs/spool.md)::

    inbox/<job_id>/                          submitted job folders (".<name>" while copied)
    active/<job_id>                          marker: the job is running (leader)
    requests/                                users' requests about their jobs
    jobs/<job_id>/job.yaml, origin.json, code/, spec.json, owner.json
    jobs/<job_id>/retry.json, retry_kept.jsonl, retry_order.json   (a retry job)
    jobs/<job_id>/state/status.json, final.json, cancel, started.json, issued.e<n>.log
    jobs/<job_id>/tasks/pending/<shard>/<task>
    jobs/<job_id>/tasks/claimed/<node>/<task>
    jobs/<job_id>/tasks/done/<shard>/<task>.<node>
    jobs/<job_id>/tasks/returned/<task>
    jobs/<job_id>/tasks/void/<task>[.<node>]
    jobs/<job_id>/results/<shard>/<task>.<node>.res
    jobs/<job_id>/outputs/, logs/, work/<node>/<process>/
    jobs/<job_id>/nodes/<node>.json          one node's view of its workers
    jobs/.refused/                           inbox folders the leader refused
    pipelines/<id>/pipeline.json, state.json, final.json, steps/<step>/, logs/
    nodes/<node>.json                        agent heartbeats
    leader/lease.json, leader/epoch-<n>      leader election
    leader/nodes.json                        the leader's view of the fleet
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from prsd.spool.pipelinelayout import PipelineLayout
from prsd.wire.logtree import LogTree

if TYPE_CHECKING:
    from pathlib import Path

SHARD_SIZE = 4096
"""Mini-batches per shard directory: a million-mini-batch job lists at most 4096 names."""

MB_DIGITS = 9

REFUSED = ".refused"
"""``jobs/.refused/``: a leading dot, so no job id ever names it."""
ISSUE_LOG_PREFIX = "issued.e"
"""``state/issued.e<epoch>.log``: the task names one leader created (prsd/spool/issuelog.py)."""

_NODE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
_JOB_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,99}$")
_TASK_RE = re.compile(r"^(\d{9})\.a(\d{1,6})\.e(\d{1,9})$")
_DONE_RE = re.compile(r"^(\d{9}\.a\d{1,6}\.e\d{1,9})\.([A-Za-z0-9][A-Za-z0-9_.-]{0,62})$")
_PROCESS_RE = re.compile(r"^process\d{3,6}$")


def valid_node_id(node_id: str) -> bool:
    """True for a node id that is safe as a file name (letters, digits, ``_.-``)."""
    return bool(_NODE_RE.match(node_id)) and ".." not in node_id


def valid_job_id(job_id: str) -> bool:
    """True for a job id made by :func:`prsd.spool.jobid.make_job_id`."""
    return bool(_JOB_RE.match(job_id))


def valid_process_name(name: str) -> bool:
    """True for ``processNNN``."""
    return bool(_PROCESS_RE.match(name))


def process_name(number: int) -> str:
    """The name of the ``number``-th worker started on a node for a job (``process007``)."""
    return f"process{number:03d}"


def mb_id(index: int) -> str:
    """A mini-batch id as written in logs and file names: ``000000042``."""
    return f"{index:0{MB_DIGITS}d}"


def shard_of(mb_index: int) -> str:
    """The shard directory name that holds tasks and results of this mini-batch."""
    return f"{mb_index // SHARD_SIZE:06d}"


PROBE_ATTEMPT_BASE = 900_000  # task attempts of the leader's probes; a real attempt never gets here


@dataclass(frozen=True, order=True)
class TaskName:
    """Identity of one task file: its first mini-batch, attempt and writer's epoch.

    Every mini-batch in a task shares the task's attempt number. The pair (first
    mini-batch, attempt) is unique over a job's life because each new task that holds
    a mini-batch raises that mini-batch's attempt; the epoch keeps a deposed leader's
    late writes from ever colliding with the current leader's names.
    """

    first_mb: int
    attempt: int
    epoch: int

    @property
    def name(self) -> str:
        """The file name: ``000000042.a3.e2``."""
        return f"{mb_id(self.first_mb)}.a{self.attempt}.e{self.epoch}"

    @property
    def shard(self) -> str:
        """The shard directory of this task."""
        return shard_of(self.first_mb)

    def next_attempt(self, epoch: int) -> TaskName:
        """The name of this task requeued by the leader of ``epoch``."""
        return TaskName(self.first_mb, self.attempt + 1, epoch)

    @classmethod
    def parse(cls, name: str) -> TaskName | None:
        """Parse a task file name; None for anything else (temp files, strangers)."""
        m = _TASK_RE.match(name)
        if m is None:
            return None
        return cls(int(m.group(1)), int(m.group(2)), int(m.group(3)))


def parse_done_name(name: str) -> tuple[TaskName, str] | None:
    """Parse ``<task>.<node>`` (a committed task); None for anything else."""
    m = _DONE_RE.match(name)
    if m is None:
        return None
    task = TaskName.parse(m.group(1))
    if task is None or not valid_node_id(m.group(2)):
        return None
    return task, m.group(2)


@dataclass(frozen=True)
class SpoolLayout:
    """Paths of the spool rooted at ``root``."""

    root: Path

    @cached_property
    def inbox(self) -> Path:
        return self.root / "inbox"

    @cached_property
    def jobs(self) -> Path:
        return self.root / "jobs"

    @cached_property
    def active(self) -> Path:
        return self.root / "active"

    @cached_property
    def nodes(self) -> Path:
        return self.root / "nodes"

    @cached_property
    def leader(self) -> Path:
        return self.root / "leader"

    @cached_property
    def requests(self) -> Path:
        """``requests/``: users' requests about their jobs (cancel, retry), checked by owner."""
        return self.root / "requests"

    @cached_property
    def refused(self) -> Path:
        """``jobs/.refused/``: inbox folders the leader refused, moved aside whole."""
        return self.jobs / REFUSED

    @cached_property
    def pipelines(self) -> Path:
        """``pipelines/``: submitted pipelines (1777: every user submits)."""
        return self.root / "pipelines"

    @cached_property
    def nodes_view(self) -> Path:
        """``leader/nodes.json``: the leader's view of the fleet, for ``prsctl nodes``."""
        return self.leader / "nodes.json"

    @cached_property
    def inbox_seen(self) -> Path:
        """``leader/inbox_seen.json``: when the leaders first saw each incomplete inbox
        folder (prsd/spool/inboxrecords.py), so a restart keeps the grace period."""
        return self.leader / "inbox_seen.json"

    def node_heartbeat(self, node_id: str) -> Path:
        return self.nodes / f"{node_id}.json"

    def queued(self, name: str) -> Path:
        """``inbox/<name>``: a submitted job folder not yet taken in."""
        return self.inbox / name

    def job(self, job_id: str) -> JobLayout:
        return JobLayout(self.jobs / job_id, job_id)

    def pipeline(self, pipeline_id: str) -> PipelineLayout:
        return PipelineLayout(self.pipelines / pipeline_id, pipeline_id)

    def active_marker(self, job_id: str) -> Path:
        """``active/<job_id>``: the job is running."""
        return self.active / job_id

    def top_dirs(self) -> tuple[Path, ...]:
        """Directories every spool has (created by ``open_spool``)."""
        return (self.inbox, self.jobs, self.active, self.nodes, self.leader)


@dataclass(frozen=True)
class JobLayout:
    """Paths of one job folder in the spool (or of a folder staged to become one)."""

    root: Path
    job_id: str

    @cached_property
    def spool(self) -> SpoolLayout:
        """The spool this job folder is in: the folder that holds ``jobs/<job_id>``."""
        return SpoolLayout(self.root.parents[1])

    @cached_property
    def job_yaml(self) -> Path:
        return self.root / "job.yaml"

    @cached_property
    def origin(self) -> Path:
        return self.root / "origin.json"

    @cached_property
    def spec(self) -> Path:
        return self.root / "spec.json"

    @cached_property
    def owner_record(self) -> Path:
        """``owner.json``: the owner recorded by the leader at intake (storage/jobowner.py)."""
        return self.root / "owner.json"

    @cached_property
    def code(self) -> Path:
        return self.root / "code"

    @cached_property
    def state(self) -> Path:
        return self.root / "state"

    @cached_property
    def status(self) -> Path:
        return self.state / "status.json"

    @cached_property
    def final(self) -> Path:
        return self.state / "final.json"

    @cached_property
    def cancel(self) -> Path:
        return self.state / "cancel"

    @cached_property
    def started(self) -> Path:
        """``state/started.json``: when the job first ran (its clock survives a takeover)."""
        return self.state / "started.json"

    def issue_log(self, epoch: int) -> Path:
        """``state/issued.e<epoch>.log``: every task name the leader of ``epoch`` created."""
        return self.state / f"{ISSUE_LOG_PREFIX}{epoch:08d}.log"

    @cached_property
    def retry_plan(self) -> Path:
        """``retry.json``: what a retry job runs again (written by ``prsctl retry``)."""
        return self.root / "retry.json"

    @cached_property
    def retry_kept(self) -> Path:
        """``retry_kept.jsonl``: the results a retry job keeps from the jobs it retries."""
        return self.root / "retry_kept.jsonl"

    @cached_property
    def retry_order(self) -> Path:
        """``retry_order.json``: the order of a retry's output, written by the leader."""
        return self.root / "retry_order.json"

    @cached_property
    def node_reports(self) -> Path:
        """``nodes/``: one report per node of its workers for this job."""
        return self.root / "nodes"

    def node_report(self, node_id: str) -> Path:
        """``nodes/<node>.json``: one node's view of its workers for this job."""
        return self.node_reports / f"{node_id}.json"

    @cached_property
    def tasks(self) -> Path:
        return self.root / "tasks"

    @cached_property
    def pending(self) -> Path:
        return self.tasks / "pending"

    @cached_property
    def claimed(self) -> Path:
        return self.tasks / "claimed"

    @cached_property
    def done(self) -> Path:
        return self.tasks / "done"

    @cached_property
    def returned(self) -> Path:
        return self.tasks / "returned"

    @cached_property
    def void(self) -> Path:
        return self.tasks / "void"

    @cached_property
    def results(self) -> Path:
        return self.root / "results"

    @cached_property
    def outputs(self) -> Path:
        return self.root / "outputs"

    @cached_property
    def logs(self) -> Path:
        return self.log_tree.root

    @cached_property
    def log_tree(self) -> LogTree:
        """Every path under ``logs/`` (prsd.wire.logtree)."""
        return LogTree.of_job(self.root)

    @cached_property
    def work(self) -> Path:
        return self.root / "work"

    def pending_task(self, task: TaskName) -> Path:
        return self.pending / task.shard / task.name

    def claimed_dir(self, node_id: str) -> Path:
        return self.claimed / node_id

    def claimed_task(self, node_id: str, task: TaskName) -> Path:
        return self.claimed / node_id / task.name

    def done_task(self, task: TaskName, node_id: str) -> Path:
        return self.done / task.shard / f"{task.name}.{node_id}"

    def returned_task(self, task: TaskName) -> Path:
        return self.returned / task.name

    def result(self, task: TaskName, node_id: str) -> Path:
        return self.results / task.shard / f"{task.name}.{node_id}.res"

    def worker_dir(self, node_id: str, process: str) -> Path:
        return self.work / node_id / process

    def daemon_names(self) -> frozenset[str]:
        """The names the daemons keep at the top of this job's folder: never an output."""
        kept = [self.job_yaml, self.origin, self.spec, self.owner_record, self.code]
        kept += [self.state, self.tasks, self.results, self.node_reports, self.logs, self.work]
        kept += [self.retry_plan, self.retry_kept, self.retry_order]
        return frozenset(p.name for p in kept)

    def task_dirs(self) -> tuple[Path, ...]:
        """Directories created when the job is taken in."""
        return (
            self.state,
            self.pending,
            self.claimed,
            self.done,
            self.returned,
            self.void,
            self.results,
            self.outputs,
            self.logs,
        )
