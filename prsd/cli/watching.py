"""``prsctl status JOB`` and ``--watch``: the job's view, once or until the job ends.

On a terminal ``--watch`` redraws the view in place; anywhere else (a pipe, a log
file) it streams one line (:func:`prsd.cli.runview.progress_line`) each time the
job's progress changes, at most one per interval, then prints the final view: a
reader sees the job move while it runs, not everything at the end.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from prsd.cli.envs import environment_lines
from prsd.errors import ExitCode
from prsd.read.jobs import is_ended, read_job_status

if TYPE_CHECKING:
    from rich.console import RenderableType

    from prsd.spool.layout import SpoolLayout


def job_renderable(spool: SpoolLayout, job_id: str) -> tuple[RenderableType, dict[str, Any]]:
    """The job's rich view (with its nodes and environment builds while it runs)."""
    from rich.console import Group
    from rich.text import Text

    from prsd.cli.statusview import job_view
    from prsd.read.nodes import node_rows

    doc = read_job_status(spool, job_id)
    nodes = [] if is_ended(doc) else node_rows(spool, datetime.now(UTC), job_id)
    view = job_view(doc, nodes)
    building = [] if is_ended(doc) else environment_lines(spool, job_id)
    return (Group(view, *map(Text, building)) if building else view), doc


def watch(spool: SpoolLayout, job_id: str, interval_s: float) -> int:
    """Follow the job until it ends; exit with the job's code."""
    from prsd.cli import console
    from prsd.spool.states import EXIT_CODES

    if console.out.is_terminal:
        doc = _redraw(spool, job_id, interval_s)
    else:
        doc = _stream(spool, job_id, interval_s)
    return int(EXIT_CODES.get(str(doc.get("state")), ExitCode.OK))


def _redraw(spool: SpoolLayout, job_id: str, interval_s: float) -> dict[str, Any]:
    from rich.live import Live

    from prsd.cli import console

    view, doc = job_renderable(spool, job_id)
    with Live(view, console=console.out, auto_refresh=False, transient=False) as live:
        while not is_ended(doc):
            time.sleep(interval_s)
            view, doc = job_renderable(spool, job_id)
            live.update(view, refresh=True)
    return doc


def _stream(spool: SpoolLayout, job_id: str, interval_s: float) -> dict[str, Any]:
    from prsd.cli import console
    from prsd.cli.runview import build_phases, progress_line

    last: tuple[str, tuple[tuple[str, str], ...]] = ("", ())
    doc = read_job_status(spool, job_id)
    while not is_ended(doc):
        moved = (progress_line(_without_clock(doc)), build_phases(doc))
        if moved != last:
            console.say(progress_line(doc))
            last = moved
        time.sleep(interval_s)
        doc = read_job_status(spool, job_id)
    view, doc = job_renderable(spool, job_id)
    console.out.print(view)
    return doc


def _without_clock(doc: dict[str, Any]) -> dict[str, Any]:
    """The document less its times: a line is streamed when the work moved, not the clock
    (a build's phase moving is seen by :func:`prsd.cli.runview.build_phases`)."""
    return {k: v for k, v in doc.items() if k not in ("elapsed_s", "eta_s", "nodes")}
