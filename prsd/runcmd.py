"""``prsd run``: submit a job or a pipeline, then run it here or follow the daemons.

A job is handed to the spool's daemons where they serve it (unless ``--embedded``) and
followed (:func:`prsd.embedded.follow_interruptible`), else led and served in this
process (:func:`prsd.embedded.run_interruptible`, workers forked from a fork server
where they can be); a pipeline is run here (:mod:`prsd.pipelinerun`). ``--retry``
runs here again what a job or pipeline left failed, as ``prsctl retry`` queues it.
The result is printed; the exit code is the job's (130 when a second Ctrl-C left).

Errors: a bad submission raises :class:`~prsd.errors.PrsdError` (the caller prints it,
exit 2) before an id is printed; what the run raises is :func:`prsd.runhere.run_here`'s.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import anyio

from prsd.cli import console
from prsd.cmdline import node_id_of
from prsd.errors import PrsdError
from prsd.logconfig import get_logger

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from prsd.agent.forks import ForkServer
    from prsd.cli.runview import ProgressView
    from prsd.leader.end.finish import FinalState
    from prsd.runhere import LeftEarly
    from prsd.spool.layout import SpoolLayout

log = get_logger("prsd")


def run_command(spool: SpoolLayout, args: argparse.Namespace) -> int:
    """One job end to end: handed to the spool's daemons when they serve it (unless
    ``--embedded``), else led and served in this process."""
    from prsd.cli.buildable import refuse_unbuildable
    from prsd.cli.jobnotes import print_notes
    from prsd.cli.runview import write_line
    from prsd.jobspec.pipefile import pipeline_file
    from prsd.submit import submit

    if args.retry is not None:
        return _run_retry(spool, args)
    if args.job_dir is None:
        raise PrsdError("give a job (a YAML file, or a folder with job.yaml) or --retry JOB")
    pipeline = pipeline_file(args.job_dir)
    if pipeline is not None:
        from prsd.pipelinerun import run_pipeline_here  # a pipeline's code: not for a job

        node = node_id_of(args)
        return run_pipeline_here(pipeline, spool, args.overrides, args.name, node, quiet=args.quiet)

    def submit_job() -> str:
        check = functools.partial(refuse_unbuildable, spool.root, args.job_dir, quiet=args.quiet)
        job_id, spec = submit(
            args.job_dir, spool, name=args.name, overrides=args.overrides, check=check
        )
        write_line(f"job {job_id}")
        print_notes(spec, (args.job_dir, spool.job(job_id).root), "prsd", quiet=args.quiet)
        return job_id

    return _run_job(spool, submit_job, args)


def _run_retry(spool: SpoolLayout, args: argparse.Namespace) -> int:
    """``prsd run --retry JOB``: ``prsctl retry``'s new job (or pipeline), run here."""
    from prsd.cli.access import require_owner
    from prsd.cli.runview import write_line
    from prsd.read.jobs import resolve_job
    from prsd.submit import submit_retry

    if args.job_dir is not None:
        raise PrsdError("give a job to run or --retry JOB, not both")
    if spool.pipeline(args.retry).record.exists():
        from prsd.pipelinerun import retry_pipeline_here

        return retry_pipeline_here(spool, args.retry, args.overrides, args.name, node_id_of(args))
    old = resolve_job(spool, args.retry)
    require_owner(spool, old, "retry it")

    def submit_job() -> str:
        job_id, count, summary = submit_retry(spool, old, name=args.name, overrides=args.overrides)
        write_line(f"job {job_id}")
        console.warn(f"{count} mini-batches of {old} to run again: {summary}")
        return job_id

    return _run_job(spool, submit_job, args)


def _run_job(spool: SpoolLayout, submit_job: Callable[[], str], args: argparse.Namespace) -> int:
    """Submit (``submit_job`` prints the id), then follow the job the daemons run or lead
    and serve it here until it ends; its exit code."""
    from prsd.agent.forks import ForkServer
    from prsd.cli.runview import progress_view, write_line
    from prsd.read.fleet import daemons_serve
    from prsd.runhere import LeftEarly

    handed = not args.embedded and daemons_serve(spool, datetime.now(UTC))
    node_id = node_id_of(args)
    # Started first: it imports the worker host while the job is taken in and split.
    forks = None if handed or args.no_fork_server else _fork_server(ForkServer)
    try:
        job_id = submit_job()
        view = progress_view()
        try:
            final = _wait_for_job(spool, job_id, node_id, handed, forks, view)
        finally:
            view.close()
    finally:
        if forks is not None:
            forks.close()
    if isinstance(final, LeftEarly):
        write_line(left_early_line(spool, job_id, final))
        return 130
    result = spool.job(job_id).log_tree.job_result
    try:
        write_line(result.read_text(encoding="utf-8").rstrip())
    except OSError:
        write_line(f"{final.state}: {final.reason}")
    if final.output:
        write_line(f"output {final.output}")
    return final.exit_code


def _fork_server(server: type[ForkServer]) -> ForkServer | None:
    """The fork server, or None where it cannot start (its interpreter cannot be run by
    this user, say): the workers are then spawned one by one, as the daemons do."""
    try:
        return server.start()
    except OSError as exc:
        log.info("no fork server: workers are spawned", error=str(exc))
        return None


def _wait_for_job(
    spool: SpoolLayout,
    job_id: str,
    node_id: str,
    handed: bool,
    forks: ForkServer | None,
    view: ProgressView,
) -> FinalState | LeftEarly:
    """Follow the job the daemons run (``handed``), or run it here (workers forked from
    ``forks`` where they can be); how it ended."""
    from prsd.embedded import follow_interruptible, run_interruptible

    if handed:
        view.note(
            f"a leader and agents serve the spool {spool.root}: they run job {job_id} "
            "(`prsd run --embedded` runs it in this process)"
        )
        return anyio.run(
            lambda: follow_interruptible(spool, job_id, on_progress=view.show, say=view.note)
        )
    from prsd.agent.agent import AgentOptions

    options = AgentOptions(node_id=node_id)
    return anyio.run(
        lambda: run_interruptible(
            spool, job_id, options, on_progress=view.show, say=view.note, forks=forks
        )
    )


def left_early_line(spool: SpoolLayout, job_id: str, left: LeftEarly) -> str:
    """What a second Ctrl-C leaves behind, said in one line."""
    if left.ended:
        return f"left at once: job {job_id} ended {left.ended}; its workers stop with this process"
    root = spool.root
    return (
        f"left at once: job {job_id} stays queued in the spool {root} for a fleet "
        f"(`prsd leader --spool {root}` and `prsd agent --spool {root}` run it); "
        f"see it with `prsctl status {job_id} --spool {root}`, "
        f"cancel it with `prsctl cancel {job_id} --spool {root}`"
    )
