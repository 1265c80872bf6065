"""``prsd run``: submit a job or a pipeline, then run it here or follow the daemons.

A job is handed to the spool's daemons where they serve it (unless ``--embedded``) and
followed (:func:`prsd.follow.follow_interruptible`: this process then loads neither
the leader nor the agent), else led and served in this process
(:func:`prsd.embedded.run_interruptible`, workers forked from a fork server where they
can be); a pipeline is run here (:mod:`prsd.pipelinerun`). ``--retry`` runs here again
what a job or pipeline left failed, as ``prsctl retry`` queues it. The result is
printed; the exit code is the job's (130 when a second Ctrl-C left).

The fork server of a job run here starts first, before the job is read, submitted or
the leader and agent imported: its interpreter and the worker host's imports overlap
the rest of this start (a submission that turns out to be a pipeline closes it unused).

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

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from prsd.agent.forks import ForkServer
    from prsd.cli.runview import ProgressView
    from prsd.ctrlc import LeftEarly
    from prsd.spool.finalrecord import FinalState
    from prsd.spool.layout import SpoolLayout


def run_command(spool: SpoolLayout, args: argparse.Namespace) -> int:
    """One job end to end: handed to the spool's daemons when they serve it (unless
    ``--embedded``), else led and served in this process."""
    from prsd.read.fleet import daemons_serve

    if args.retry is not None:
        return _run_retry(spool, args)
    if args.job_dir is None:
        raise PrsdError("give a job (a YAML file, or a folder with job.yaml) or --retry JOB")
    handed = not args.embedded and daemons_serve(spool, datetime.now(UTC))
    forks = None if handed or args.no_fork_server else _fork_server()
    try:
        return _run_submission(spool, args, handed, forks)
    finally:
        if forks is not None:
            forks.close()


def _run_submission(
    spool: SpoolLayout, args: argparse.Namespace, handed: bool, forks: ForkServer | None
) -> int:
    """``prsd run JOB``: a pipeline here, or the job submitted and run or followed."""
    from prsd.cli.buildable import refuse_unbuildable
    from prsd.cli.jobnotes import print_notes
    from prsd.cli.runview import write_line
    from prsd.jobspec.pipefile import pipeline_file
    from prsd.submit import submit

    pipeline = pipeline_file(args.job_dir)
    if pipeline is not None:
        from prsd.pipelinerun import run_pipeline_here  # a pipeline's code: not for a job

        if forks is not None:
            forks.close()  # a pipeline's workers are spawned
        node = node_id_of(args)
        return run_pipeline_here(pipeline, spool, args.overrides, args.name, node, quiet=args.quiet)

    def submit_job() -> str:
        check = functools.partial(refuse_unbuildable, spool.root, args.job_dir, quiet=args.quiet)
        job_id, spec = submit(
            args.job_dir, spool, name=args.name, overrides=args.overrides, check=check
        )
        if forks is not None:  # the input loader's modules, while the job is taken in
            forks.preload_for(spec.input.format)
        write_line(f"job {job_id}")
        print_notes(spec, (args.job_dir, spool.job(job_id).root), "prsd", quiet=args.quiet)
        return job_id

    return _run_job(spool, submit_job, args, handed, forks)


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

    from prsd.read.fleet import daemons_serve

    handed = not args.embedded and daemons_serve(spool, datetime.now(UTC))
    forks = None if handed or args.no_fork_server else _fork_server()
    try:
        return _run_job(spool, submit_job, args, handed, forks)
    finally:
        if forks is not None:
            forks.close()


def _run_job(
    spool: SpoolLayout,
    submit_job: Callable[[], str],
    args: argparse.Namespace,
    handed: bool,
    forks: ForkServer | None,
) -> int:
    """Submit (``submit_job`` prints the id), then follow the job the daemons run
    (``handed``) or lead and serve it here until it ends; its exit code."""
    from prsd.cli.runview import progress_view, write_line
    from prsd.ctrlc import LeftEarly

    node_id = node_id_of(args)
    job_id = submit_job()
    view = progress_view()
    try:
        final = _wait_for_job(spool, job_id, node_id, handed, forks, view)
    finally:
        view.close()
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


def _fork_server() -> ForkServer | None:
    """The fork server (:func:`prsd.agent.forks.start_fork_server`), or None."""
    from prsd.agent.forks import start_fork_server

    return start_fork_server()


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
    if handed:
        from prsd.follow import follow_interruptible  # the daemons run it: no leader or agent here

        view.note(
            f"a leader and agents serve the spool {spool.root}: they run job {job_id} "
            "(`prsd run --embedded` runs it in this process)"
        )
        return anyio.run(
            lambda: follow_interruptible(spool, job_id, on_progress=view.show, say=view.note)
        )
    from prsd.agent.agent import AgentOptions
    from prsd.embedded import run_interruptible

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
