"""Starting one worker process: as the job's owner, from a clean environment, in its cgroup.

Invariant: when :func:`launch_worker` returns, the worker process (spawned, or forked
from the job context's fork server where ``prsd.agent.forks.can_fork`` allows) runs as
the job's owner (or the agent's user), with the environment of ``prsd.worker.launch.worker_env``
and ``PRSD_WORKER_TOKEN``, and is already in its own cgroup (``prsd.agent.cgroup``)
with the node's memory limit; it has been sent nothing yet, so no user code ran.

Errors: PermissionError when the owner could not start prsd's ``boot.py``; OSError
when the process cannot be spawned or its folders made.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio.to_thread

from prsd.agent.cgroup import TOKEN_VARIABLE, node_sandbox
from prsd.agent.forks import can_fork
from prsd.agent.proc import WorkerProcess, spawn_worker
from prsd.logconfig import get_logger
from prsd.owner import (
    WORKER_UMASK,
    RunAs,
    make_dirs_for,
    make_files_for,
    run_as_for_job,
    unreadable_for,
)
from prsd.tunables import worker_memory_limit, worker_memory_max_bytes, worker_pids_max
from prsd.worker.launch import BOOT_PATH, worker_command

if TYPE_CHECKING:
    from prsd.agent.context import JobContext, ProcessPaths

log = get_logger("prsd.agent")


@dataclass(frozen=True)
class Launched:
    """A started worker process, who it runs as, and its memory limit (None: none)."""

    proc: WorkerProcess
    run_as: RunAs | None
    memory_limit_bytes: int | None


async def launch_worker(ctx: JobContext, gpu: int | None, paths: ProcessPaths) -> Launched:
    """Spawn one worker of ``ctx``'s job and put it in its cgroup (see the module header).

    Raises:
        PermissionError: the job's owner cannot read prsd's installation.
        OSError: the process or its folders could not be made.
    """
    # Run as the owner the leader recorded; what the worker writes in the spool is theirs.
    run_as = run_as_for_job(ctx.layout)
    if run_as is not None:
        installation = str(Path(BOOT_PATH).parents[2])  # the folder that holds prsd/
        why = unreadable_for(run_as, BOOT_PATH, list_from=installation)
        if why is not None:
            raise PermissionError(
                f"the worker would run as the job's owner and start from prsd's "
                f"{BOOT_PATH}, but {why}: make prsd's installation readable by job owners"
            )
    folders = [paths.working_dir, paths.log_dir, paths.error.parent, ctx.layout.outputs]
    # Folder outputs inside the job's outputs/ exist before the script runs (Azure mounts them):
    # for a job run as its owner they were made at intake with the owner's ids
    # (prsd/leader/intake/intake.py), never by root inside the owner's folder.
    if run_as is None:
        outputs = (Path(p) for p in ctx.spec.output_folders)
        folders += [p for p in outputs if p.is_relative_to(ctx.layout.outputs)]
    make_dirs_for(run_as, folders, anchor=ctx.layout.root)
    make_files_for(run_as, [paths.stdout, paths.stderr], anchor=ctx.layout.root)
    python = ctx.spec.python

    def command(fd: int) -> list[str]:
        return worker_command(python, fd)

    sandbox = node_sandbox()
    token = sandbox.new_token()
    env = ctx.env(gpu, run_as.uid if run_as else None, str(paths.working_dir))
    env[TOKEN_VARIABLE] = token
    forks, uid = ctx.forks, run_as.uid if run_as else None
    proc: WorkerProcess | None = None
    if forks is not None and can_fork(forks.env, env, python, uid):
        forks.preload_for(ctx.kind)  # once per server: its later forks have them
        try:
            proc = await forks.spawn(
                env, paths.working_dir, paths.stdout, paths.stderr, WORKER_UMASK
            )
        except OSError as exc:  # the server is gone: spawn as without one
            log.warning("fork server: spawning instead", error=str(exc))
    if proc is None:
        proc = await spawn_worker(
            command,
            env=env,
            cwd=paths.working_dir,
            stdout_path=paths.stdout,
            stderr_path=paths.stderr,
            user=uid,
            group=run_as.gid if run_as else None,
            extra_groups=list(run_as.groups) if run_as else None,
            umask=WORKER_UMASK,
        )
    # Into its cgroup before the hello frame: no user code runs outside it.
    limit = worker_memory_limit(ctx.spec.max_memory_per_worker_bytes, worker_memory_max_bytes())
    pids = worker_pids_max()
    proc.group = await anyio.to_thread.run_sync(sandbox.enter, proc.pid, token, limit, pids)
    if run_as is not None and run_as.uid != 0:  # root ignores RLIMIT_NPROC
        limit_processes(proc.pid, pids)
    return Launched(proc, run_as, limit)


def limit_processes(pid: int, most: int) -> None:
    """``RLIMIT_NPROC`` of the worker ``pid`` (before it runs any user code): it counts
    every process of the worker's uid, so a fork bomb stops there even without a pids
    cgroup. A worker that is gone already is left alone."""
    try:
        resource.prlimit(pid, resource.RLIMIT_NPROC, (most, most))
    except (ProcessLookupError, PermissionError, ValueError):
        pass


def sandbox_lines(limit: int | None) -> list[str]:
    """What the job's ``_main.txt`` says about worker cgroups and the memory limit."""
    sandbox = node_sandbox()
    lines = [sandbox.describe(), *sandbox.notes]
    if (slow := sandbox.move_note()) is not None:
        lines.append(slow)
    where = "no pids cgroup here" if sandbox.pids_limit_unenforced() else "pids.max"
    lines.append(
        f"worker process limit: {worker_pids_max()} (PRSD_WORKER_PIDS_MAX; {where}, "
        "and RLIMIT_NPROC of a worker run as the job's owner)"
    )
    if limit and sandbox.memory_limit_unenforced():
        lines.append(f"worker memory limit {limit} bytes cannot be enforced on this node")
    elif limit:
        lines.append(
            f"worker memory limit: {limit} bytes (the tighter of the job's "
            "resources.max_memory_per_worker and the node's PRSD_WORKER_MEMORY_MAX)"
        )
    return lines
