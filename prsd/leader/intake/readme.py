"""``logs/readme.txt``: what each file of a job's log tree holds (docs/logs.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prsd.jobspec.said import notes_text, spec_notes
from prsd.spool.atomic import write_atomic
from prsd.wire.logtree import LogTree

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.jobspec import JobSpec
    from prsd.spool.layout import JobLayout

README = """\
prsd job logs: what each file holds
====================================

Start with job_result.txt: it says whether the job Completed, Completed with
failures, Failed or was Canceled, the reason, and for a failure the first root cause
(mini-batch, node, worker, the last lines of the traceback) and the file that holds
the rest. "Completed with failures" means the output lacks the rows of the inputs
listed in sys/failed_items.txt.

job_result.txt
    Completed / Failed / Canceled, the reason, counts, the output file, where to look.
job_progress_overview.<YYYYMMDD>.txt
    One line per event, "<local ISO time> <message>" in Azure's wording: scheduling,
    "Processed N of M mini batches in h:mm:ss. Estimated remaining time h:mm:ss.",
    and the result. A new file starts each day.
job_error.txt
    Why the job ended: the cause, the first error and the file with its full text,
    then one line per distinct error, most frequent first, with its count and where
    it first happened. "No errors." only for a job that had none.
readme.txt
    This file.

sys/job_notes.txt
    What the job does differently from Azure, said once when it was taken in:
    keys accepted and not used, Azure system arguments passed on and not acted
    on, outputs placed elsewhere, names close to a known one, the environment.
sys/master_role.txt
    The leader's view: intake, scheduling, requeues, nodes lost, the result.
sys/job_report/processed_mini-batches.csv
    One row per attempt of a mini-batch. Columns:
      mini_batch_id     the mini-batch's index in input order (000000042)
      attempt           1 for the first pick, 2 for the second, ...
      status            succeeded | failed | timeout | crashed | oom | requeued
                        (requeued: the attempt never ran: node lost, work handed back)
      node_id, process_name, pid   where it ran
      items             inputs in the mini-batch (files, or rows)
      succeeded_items   elements run() returned (capped at items)
      failed_items      items - succeeded_items
      start_time        when run() was called (ISO 8601, UTC)
      elapsed_s         loading + run() + writing its output
      process_time_s    CPU time of the worker during that time
      run_method_s      time inside run()
      error             the error in one line, for attempts that failed
sys/failed_items.txt
    Every input with no row in the output, one per line, tab-separated:
      input             a file path, "<file> from line L bytes S-E" (CSV, JSON Lines),
                        "<file> row groups 3,4" (Parquet), or "partition k='v'"
      mini-batch        the mini-batch it was in (000000042)
      kind              failed | timeout | crashed | oom (its last attempt), or
                        partial (run() returned fewer elements than inputs)
      error             the error in one line
    Lines starting with # are comments (bisection's findings come last).
sys/node/<node_id>/_main.txt
    The agent's log for this job on that node: worker starts, exits with return code
    and signal ("process002 exits with returncode -9 (SIGKILL)"), and who sent it.
sys/node/<node_id>/<process_name>.txt
    Every mini-batch that worker picked and finished: IP, PID, items, succeeded,
    failed, start, elapsed, process (CPU) time, run() time.
sys/node/<node_id>/<process_name>.profile
    cProfile statistics of that worker (with --profiling_module cProfile).
sys/error/<node_id>/
    Exceptions inside prsd itself on that node.
sys/error/leader.txt
    The traceback of a fault of the leader that ended the job (absent otherwise).

user/entry_script_log/<node_id>/<process_name>.log.txt
    What the entry script logged through EntryScript().logger.
user/stdout/<node_id>/<process_name>.stdout.txt
    print() and the root logger of that worker.
user/stderr/<node_id>/<process_name>.stderr.txt
    Everything the worker wrote to stderr (including fatal-error dumps).
user/error/<node_id>/<process_name>.txt
    Full tracebacks of init() and run() failures, and the Python stacks of a
    run() that timed out (dumped just before the worker was stopped).
user/error.txt
    The same text as job_error.txt.
user/metrics/<node_id>/<process_name>.jsonl
    Metrics of scripts that use azureml.core's Run.get_context().log(...): one JSON
    object per call: time, run, kind (scalar, list, row, table, image, upload),
    name, value, description.

perf/<node_id>/
    What each node's resource monitor saw, every resource_monitor_interval seconds
    (0 turns it off), once when the node started on the job and once when it stopped.
    Times are UTC, sizes MB (2**20 bytes). The monitor's own cost per sample is the
    last "resource monitor:" line of sys/node/<node_id>/_main.txt.
perf/<node_id>/node_resource_usage.csv
    One row per sample:
      Utc Time                      when the sample was taken
      Cpu Percent                   CPU use of the whole node since the last sample
                                    (100 = every core busy)
      Memory Total (MB), Memory Available (MB), Memory Used (MB), Memory Used Percent
                                    used = total - available
      Disk Io Read Count, Disk Io Write Count, Disk Io Read (MB), Disk Io Write (MB)
                                    disk operations and bytes since the machine booted
      Network Sent (MB), Network Recv (MB)
                                    network bytes since the machine booted
      Gpu <i> Utilization Percent, Gpu <i> Memory Used (MB), Gpu <i> Memory Total (MB)
                                    per GPU, from NVML (empty where NVML said nothing)
perf/<node_id>/processes_resource_usage.csv
    One row per worker per sample; a worker's child processes are added to it:
      Utc Time, Process Name (processNNN), Pid
      Cpu Percent                   CPU use since the last sample (100 = one core)
      Memory Rss (MB)               resident memory
      Threads, Child Processes
      Gpu Index                     the worker's CUDA_VISIBLE_DEVICES, empty if none
      Gpu Memory Used (MB)          GPU memory of the worker's process (NVML)
perf/<node_id>/node_disk_usage.csv
    One row per mounted file system (and the spool's) per sample:
      Utc Time, Mount Point, Device, File System, Total (MB), Used (MB), Free (MB),
      Used Percent
perf/<node_id>/os/<YYYYMMDDHH>/processes_<MM>
    A ps-style list of every process on the node at that minute (UTC): PID, PPID,
    USER, %CPU, RSS(MB), STAT, COMMAND, busiest first.
"""


def write_job_notes(logs: Path, spec: JobSpec) -> None:
    """Write logs/sys/job_notes.txt: what the job does differently from Azure."""
    tree = LogTree(logs)
    tree.sys.mkdir(parents=True, exist_ok=True)
    write_atomic(tree.job_notes, notes_text(spec_notes(spec)).encode())


def write_readme(layout: JobLayout) -> None:
    """Write logs/readme.txt for a job (idempotent)."""
    layout.logs.mkdir(parents=True, exist_ok=True)
    write_atomic(layout.log_tree.readme, README.encode(), durable=False)
