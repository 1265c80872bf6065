"""``prsctl``: the user's command line (docs/prsctl.md). Wiring only: arguments -> views.

Every command reads or writes the spool and nothing else: ``status`` reads the
leader's summaries, ``nodes`` the heartbeats, ``logs`` the log tree, ``cancel``
and ``gc`` drop requests the leader checks against the job's owner and answers,
``submit`` and ``retry`` put a job folder in the inbox. No command talks to a daemon.

Errors reach the user as one line on stderr (``prsctl: error: ...``), never as a
traceback: refusals, permission problems (the file, the user, what to change) and a
reader that closed the pipe (``prsctl logs JOB | head``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prsd.cli.access import permission_line, require_owner, unreadable_line
from prsd.cli.envs import add_parser as add_env_parser
from prsd.cli.envs import cmd_env
from prsd.cli.gc import add_parser as add_gc_parser
from prsd.cli.gc import cmd_gc
from prsd.cli.settings import spool_folder
from prsd.errors import ExitCode, PrsdError
from prsd.read.jobs import is_ended, read_job_status, read_job_statuses, resolve_job
from prsd.spool.opening import open_spool
from prsd.spool.statusschema import SCHEMA_VERSION

if TYPE_CHECKING:
    from prsd.spool.layout import SpoolLayout

# The terminal views (rich) are imported by the commands that draw them, so that
# `prsctl status --json` and friends start fast: status is meant to be cheap.

WATCH_INTERVAL_S = 1.0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="prsctl", description="prsd's command line")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser(
        "submit", help="submit a job or pipeline (YAML file or job folder); prints its id"
    )
    s.add_argument("job_dir", type=Path)
    s.add_argument("--name", default=None)
    s.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="change a key of the YAML before it is checked (az ml syntax, repeatable)",
    )
    s.add_argument(
        "--quiet", action="store_true", help="do not print the job's notes (keys not used ...)"
    )
    st = sub.add_parser("status", help="all jobs, or one job in detail")
    st.add_argument("job", nargs="?")
    st.add_argument(
        "--watch",
        action="store_true",
        help="until the job ends: redraw in place (a terminal) or stream lines (a pipe)",
    )
    st.add_argument("--json", action="store_true", help="stable JSON (docs/prsctl.md)")
    st.add_argument("--interval", type=float, default=WATCH_INTERVAL_S, help=argparse.SUPPRESS)
    c = sub.add_parser("cancel", help="cancel a job")
    c.add_argument("job")
    c.add_argument(
        "--wait", type=float, default=30.0, help="seconds to wait for the leader's answer"
    )
    lg = sub.add_parser("logs", help="a job's log files merged by time")
    lg.add_argument("job")
    lg.add_argument("--errors", action="store_true", help="error summary and tracebacks")
    lg.add_argument("--node", default=None, help="one node's agent and worker logs")
    lg.add_argument("--process", default=None, help="one worker (processNNN): every file")
    n = sub.add_parser("nodes", help="agents, slots, GPUs, heartbeat age, current work")
    n.add_argument("--json", action="store_true")
    r = sub.add_parser("retry", help="a new job running again only the inputs that failed")
    r.add_argument("job")
    r.add_argument("--name", default=None)
    r.add_argument("--code", type=Path, default=None, help="a fixed code folder to run them with")
    r.add_argument(
        "--set",
        dest="overrides",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=VALUE",
        help="change the job YAML (az ml syntax: retry_settings.timeout=120)",
    )
    rep = sub.add_parser("report", help="a self-contained HTML report of a job (and CSV)")
    rep.add_argument("job")
    rep.add_argument("-o", "--output", type=Path, default=None, help="default: <job>.html")
    env = add_env_parser(sub)
    gc = add_gc_parser(sub)
    for sp in (s, st, c, lg, n, r, rep, env, gc):
        sp.add_argument(
            "--spool", type=Path, default=None, help="spool folder (default: $PRSD_SPOOL)"
        )
    return p


def main(argv: list[str] | None = None) -> int:
    from prsd.cli import console

    args = parser().parse_args(argv)
    spool: SpoolLayout | None = None
    try:
        submitting = args.command == "submit"
        spool = open_spool(spool_folder(args.spool, for_submit=submitting), create=submitting)
        code = int(COMMANDS[args.command](spool, args))
        sys.stdout.flush()  # here, not at exit, so a closed pipe is caught below
        return code
    except PrsdError as exc:
        console.error(exc.one_line())
        return ExitCode.CONFIG
    except BrokenPipeError:
        # The reader left (`prsctl logs JOB | head`): stop quietly, as a shell tool does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except OSError as exc:
        from prsd.spool.faults import fault_line

        line = fault_line(exc, args.command, spool.root if spool else args.spool or "the spool")
        if line is not None:  # a full, read-only or failing spool: one line
            console.error(line)
            return ExitCode.FAILURE
        if isinstance(exc, PermissionError):
            console.error(permission_line(exc, spool))
            return ExitCode.CONFIG
        where = f"{exc.filename}: " if exc.filename else ""
        console.error(f"{where}{exc.strerror or exc}")
        return ExitCode.FAILURE
    except KeyboardInterrupt:
        return 130


def cmd_submit(spool: SpoolLayout, args: argparse.Namespace) -> int:
    from prsd.cli.jobnotes import print_notes
    from prsd.cli.pipelines import handle_submit
    from prsd.cli.roots import check_job_folder, explain
    from prsd.submit import submit

    check_job_folder(args.job_dir)
    try:
        if handle_submit(spool, args.job_dir, args.overrides, args.name, quiet=args.quiet):
            _warn_if_unserved(spool, "queued")
            return ExitCode.OK
        job_id, spec = submit(args.job_dir, spool, name=args.name, overrides=args.overrides)
    except PrsdError as exc:
        raise explain(exc) from exc
    sys.stdout.write(job_id + "\n")
    sys.stdout.flush()
    print_notes(spec, (args.job_dir, spool.job(job_id).root), "prsctl", quiet=args.quiet)
    _warn_if_unserved(spool, "queued")
    return ExitCode.OK


def _warn_if_unserved(spool: SpoolLayout, what: str) -> None:
    """A line on stderr when no leader or no agent serves the spool (nothing would run)."""
    from prsd.cli import console
    from prsd.read.fleet import fleet_warning, read_fleet

    warning = fleet_warning(read_fleet(spool, datetime.now(UTC)), what)
    if warning is not None:
        console.warn(warning)


def cmd_status(spool: SpoolLayout, args: argparse.Namespace) -> int:
    # One job's status is meant to be cheap: the pipelines' module (and the YAML loader
    # it brings) is imported only when the id is a pipeline's or all jobs are listed.
    from prsd.spool.pipelinerecord import pipeline_ids

    if args.job is not None and args.job in pipeline_ids(spool):
        from prsd.cli import pipelines

        if args.watch and not args.json:
            return pipelines.watch_pipeline(spool, args.job, args.interval)
        pipelines.handle_status(spool, args.job, args.json)
        return ExitCode.OK
    if args.job is None:
        from prsd.cli import pipelines
        from prsd.cli.inboxview import inbox_summary, trim_queued
        from prsd.read.pipelines import read_pipeline_status, readable_pipelines

        docs = read_job_statuses(spool)
        inbox = inbox_summary(spool)
        if args.json:
            found = [read_pipeline_status(spool, p) for p in readable_pipelines(spool)]
            doc = {"schema": SCHEMA_VERSION, "jobs": docs, "pipelines": found}
            _print_json({**doc, "inbox": inbox.to_json()})
            return ExitCode.OK
        from prsd.cli import console
        from prsd.cli.statusview import jobs_table

        rows, shown_queued = trim_queued(spool, docs)
        if rows or readable_pipelines(spool):
            console.out.print(jobs_table(pipelines.table_rows(spool, rows)))
        elif not inbox.folders:
            console.say(f"no jobs in {spool.root}")
        for line in inbox.lines(shown_queued):
            console.say(line)
        if any(not is_ended(d) for d in docs):
            _warn_if_unserved(spool, "waiting jobs")
        _say_storage_faults(spool)
        return ExitCode.OK
    job_id = resolve_job(spool, args.job)
    require_owner(spool, job_id, "look into it")
    if args.json:
        _print_json(read_job_status(spool, job_id))
        return ExitCode.OK
    from prsd.cli import console
    from prsd.cli.watching import job_renderable, watch

    if args.watch:
        return watch(spool, job_id, args.interval)
    view, doc = job_renderable(spool, job_id)
    console.out.print(view)
    if not is_ended(doc):
        _warn_if_unserved(spool, f"job {job_id} ({str(doc.get('state', '')).lower()})")
    _say_storage_faults(spool)
    return ExitCode.OK


def _say_storage_faults(spool: SpoolLayout) -> None:
    from prsd.cli import console
    from prsd.read.nodes import storage_faults

    for line in storage_faults(spool):
        console.say(line)


def cmd_cancel(spool: SpoolLayout, args: argparse.Namespace) -> int:
    from prsd.cli import console, pipelines
    from prsd.cli.asking import ask

    if pipelines.is_pipeline_id(spool, args.job):
        pipelines.handle_cancel(spool, args.job)
        return ExitCode.OK
    job_id = resolve_job(spool, args.job)
    doc = read_job_status(spool, job_id)
    if is_ended(doc):
        console.say(f"job {job_id} already ended: {doc.get('state')}")
        return ExitCode.OK
    answer = ask(spool, job_id, "cancel", wait_s=args.wait)
    if not answer.ok:
        console.error(answer.message)
        return ExitCode.CONFIG
    console.say(answer.message)
    return ExitCode.OK


def cmd_logs(spool: SpoolLayout, args: argparse.Namespace) -> int:
    from prsd.cli import console, pipelines
    from prsd.cli.logfiles import LogQuery, read_sources, select_files
    from prsd.cli.logmerge import merge_by_time
    from prsd.spool.layout import valid_node_id, valid_process_name

    if pipelines.is_pipeline_id(spool, args.job):  # each started step's logs, in order
        for name, job_id in pipelines.started_steps(spool, args.job):
            console.say(f"== step {name}: job {job_id}")
            cmd_logs(spool, argparse.Namespace(**{**vars(args), "job": job_id}))
        return ExitCode.OK
    job_id = resolve_job(spool, args.job)
    require_owner(spool, job_id, "read its logs")
    if args.node is not None and not valid_node_id(args.node):
        raise PrsdError(f"--node {args.node!r} is not a node id")
    if args.process is not None and not valid_process_name(args.process):
        raise PrsdError(f"--process {args.process!r}: expected processNNN")
    q = LogQuery(errors=args.errors, node=args.node, process=args.process)
    files = select_files(spool.job(job_id).logs, q)
    result = [f for f in files if f[0] == "[result]"]
    unreadable: list[Path] = []
    sources = read_sources([f for f in files if f[0] != "[result]"], unreadable)
    lines = merge_by_time(sources) + merge_by_time(read_sources(result, unreadable))
    if not lines:
        console.say(f"no log lines for that in {spool.job(job_id).logs}")
    for line in lines:
        console.say(line)
    if unreadable:
        console.warn(unreadable_line(unreadable))
    return ExitCode.OK


def cmd_nodes(spool: SpoolLayout, args: argparse.Namespace) -> int:
    from prsd.cli import console
    from prsd.cli.statusview import nodes_table
    from prsd.read.nodes import node_rows

    rows = node_rows(spool, datetime.now(UTC))
    if args.json:
        _print_json({"schema": SCHEMA_VERSION, "nodes": rows})
    elif rows:
        console.out.print(nodes_table(rows))
    else:
        console.say(f"no agent has a heartbeat in {spool.nodes}")
    return ExitCode.OK


def cmd_retry(spool: SpoolLayout, args: argparse.Namespace) -> int:
    from prsd.cli import console, pipelines
    from prsd.submit import submit_retry

    if pipelines.is_pipeline_id(spool, args.job):
        pipelines.handle_retry(spool, args.job, args.overrides, args.name)
        _warn_if_unserved(spool, f"queued (or `prsd run --retry {args.job}` runs it here)")
        return ExitCode.OK
    job_id = resolve_job(spool, args.job)
    require_owner(spool, job_id, "retry it")
    new_id, count, summary = submit_retry(
        spool, job_id, name=args.name, code_dir=args.code, overrides=args.overrides
    )
    console.err.print(f"{count} mini-batches of {job_id} to run again: {summary}", markup=False)
    console.say(new_id)
    _warn_if_unserved(spool, f"queued (or `prsd run --retry {job_id}` runs it here)")
    return ExitCode.OK


def cmd_report(spool: SpoolLayout, args: argparse.Namespace) -> int:
    from prsd.cli import console
    from prsd.report.build import write_report

    job_id = resolve_job(spool, args.job)
    require_owner(spool, job_id, "read its report")
    out = args.output or Path(f"{job_id}.html")
    paths = write_report(spool.job(job_id), out)
    for p in paths:
        console.say(str(p))
    return ExitCode.OK


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=1, sort_keys=True) + "\n")


COMMANDS = {
    "submit": cmd_submit,
    "status": cmd_status,
    "cancel": cmd_cancel,
    "logs": cmd_logs,
    "nodes": cmd_nodes,
    "retry": cmd_retry,
    "report": cmd_report,
    "env": cmd_env,
    "gc": cmd_gc,
}


if __name__ == "__main__":
    sys.exit(main())
