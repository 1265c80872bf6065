"""Every path of a job's log tree (Azure's ``logs/`` layout), named in one place.

Nothing else joins the segments of this tree: the leader, the agent, the worker, the
``azureml.core`` shim, ``prsctl logs`` and the report all take their paths from a
:class:`LogTree`. The methods take any string for a node or process name, so a
``*`` gives the glob pattern of that file across nodes or processes. docs/logs.md
lists what each file holds; names are validated where they are made
(:mod:`prsd.spool.layout`), not here. Standard library only, Python 3.7.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

FAILED_ITEMS_FILE = "failed_items.txt"
REPORT_FILE = "processed_mini-batches.csv"
REPORT_EPOCH_PREFIX = "processed_mini-batches.epoch-"
NODE_USAGE_FILE = "node_resource_usage.csv"
PROCESSES_USAGE_FILE = "processes_resource_usage.csv"
DISK_USAGE_FILE = "node_disk_usage.csv"
STD_LOG_FILE = "std_log.txt"


@dataclass(frozen=True)
class LogTree:
    """The log tree of one job, rooted at ``jobs/<id>/logs``."""

    root: Path

    def pattern(self, path: Path) -> str:
        """``path`` (made with ``*`` for names) as a glob pattern relative to the root."""
        return str(path.relative_to(self.root))

    @classmethod
    def of_job(cls, job_root: str | Path) -> LogTree:
        """The tree of the job whose folder is ``job_root``."""
        return cls(Path(job_root) / "logs")

    @staticmethod
    def job_of_entry_script_logs(log_dir: str | Path) -> Path | None:
        """The job folder of a node's ``user/entry_script_log/<node>`` (None: not one)."""
        path = Path(log_dir)
        if len(path.parts) < 5 or path.parts[-4:-1] != ("logs", "user", "entry_script_log"):
            return None
        job = path.parents[3]
        return job if LogTree.of_job(job).entry_script_logs(path.name) == path else None

    # --- the top: what a user reads first ---------------------------------------------

    @property
    def readme(self) -> Path:
        return self.root / "readme.txt"

    @property
    def job_result(self) -> Path:
        return self.root / "job_result.txt"

    @property
    def job_error(self) -> Path:
        return self.root / "job_error.txt"

    def progress_overview(self, day: str) -> Path:
        """``job_progress_overview.<YYYYMMDD>.txt`` (``*``: every day)."""
        return self.root / f"job_progress_overview.{day}.txt"

    # --- sys/: prsd's own view --------------------------------------------------------

    @property
    def sys(self) -> Path:
        return self.root / "sys"

    @property
    def job_notes(self) -> Path:
        """What the job does differently from Azure."""
        return self.sys / "job_notes.txt"

    @property
    def master_role(self) -> Path:
        return self.sys / "master_role.txt"

    @property
    def failed_items(self) -> Path:
        return self.sys / FAILED_ITEMS_FILE

    @property
    def job_report(self) -> Path:
        """``sys/job_report/``: the attempts report and its per-epoch parts."""
        return self.sys / "job_report"

    @property
    def report_csv(self) -> Path:
        return self.job_report / REPORT_FILE

    def report_part(self, epoch: int) -> Path:
        """The attempts of leader ``epoch`` (epoch 1 writes the report itself)."""
        if epoch <= 1:
            return self.report_csv
        return self.job_report / f"{REPORT_EPOCH_PREFIX}{epoch:08d}.csv"

    def environment_log(self, node: str) -> Path:
        return self.sys / "environment" / f"{node}.txt"

    def node_dir(self, node: str) -> Path:
        return self.sys / "node" / node

    def node_main(self, node: str) -> Path:
        return self.node_dir(node) / "_main.txt"

    def process_log(self, node: str, process: str) -> Path:
        """One record per mini-batch the worker ran."""
        return self.node_dir(node) / f"{process}.txt"

    def process_profile(self, node: str, process: str) -> Path:
        return self.node_dir(node) / f"{process}.profile"

    @property
    def leader_error(self) -> Path:
        """Exceptions inside the leader while it drove the job."""
        return self.sys / "error" / "leader.txt"

    def sys_error_dir(self, node: str) -> Path:
        return self.sys / "error" / node

    def agent_error(self, node: str) -> Path:
        return self.sys_error_dir(node) / "agent.txt"

    # --- user/: what the entry script wrote -------------------------------------------

    @property
    def user(self) -> Path:
        return self.root / "user"

    @property
    def user_error(self) -> Path:
        """``user/error.txt``: as job_error.txt."""
        return self.user / "error.txt"

    def stdout(self, node: str, process: str) -> Path:
        return self.user / "stdout" / node / f"{process}.stdout.txt"

    def stderr(self, node: str, process: str) -> Path:
        return self.user / "stderr" / node / f"{process}.stderr.txt"

    def error(self, node: str, process: str) -> Path:
        """Full tracebacks of init() and run(), stack dumps."""
        return self.user / "error" / node / f"{process}.txt"

    def entry_script_logs(self, node: str) -> Path:
        """``EntryScript().log_dir`` of the node's workers."""
        return self.user / "entry_script_log" / node

    def entry_log(self, node: str, process: str) -> Path:
        return self.entry_script_logs(node) / f"{process}.log.txt"

    def node_std_log(self, node: str) -> Path:
        """A pipeline command step's output on that node (the command runner writes it)."""
        return self.entry_script_logs(node) / STD_LOG_FILE

    @property
    def std_log(self) -> Path:
        """``user/std_log.txt`` (Azure's name): a command step's output, every node's."""
        return self.user / STD_LOG_FILE

    def metrics(self, node: str, process: str) -> Path:
        """``Run.get_context().log(...)`` of an azureml.core script."""
        return self.user / "metrics" / node / f"{process}.jsonl"

    # --- perf/: the resource monitor ------------------------------------------------

    def perf(self, node: str) -> Path:
        """The node's resource monitor files (``*_usage.csv``, ``os/`` snapshots)."""
        return self.root / "perf" / node
