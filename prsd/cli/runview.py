"""What ``prsd run`` and ``prsctl status --watch`` show while a job runs.

On a terminal, ``prsd run`` draws a rich progress bar from its first second; anywhere
else it writes plain lines: one at once, then one every PLAIN_EVERY_S. The lines come
from :func:`progress_line`, a pure function of the job's status document (the same
document ``prsctl status --json`` prints), so the views never look into the spool.
While a node builds the job's environment, the line says so with the build's phase
and time (``building environment: resolving (0:00:12)``), and each new phase is
shown at once.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from prsd.spool.badrecord import BadRecord
from prsd.spool.durations import format_duration
from prsd.spool.envrecord import EnvBuild
from prsd.spool.nodereport import environment_line

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

PLAIN_EVERY_S = 5.0


def _int(doc: dict[str, Any], key: str) -> int:
    value = doc.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def building(doc: dict[str, Any], now: datetime | None = None) -> str:
    """The environment builds of the status document's nodes ("" when none builds)."""
    now = now or datetime.now(UTC)
    nodes = [n for n in doc.get("nodes") or [] if isinstance(n, dict)]
    lines = [(n.get("node_id"), environment_line(_build(n), now)) for n in nodes]
    shown = [(node, line) for node, line in lines if line.startswith("building")]
    if len(nodes) == 1 and shown:
        return shown[0][1]
    return "; ".join(f"node {node}: {line}" for node, line in shown)


def _build(node: dict[str, Any]) -> EnvBuild | None:
    """A status node's environment build (None: none, or one that cannot be read)."""
    value = node.get("environment")
    if not isinstance(value, dict):
        return None
    try:
        return EnvBuild.decode(value)
    except BadRecord:
        return None


def build_phases(doc: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """Each node's build state and phase: what, once changed, is shown at once."""
    nodes = [n for n in doc.get("nodes") or [] if isinstance(n, dict)]
    envs = [(n, n.get("environment") or {}) for n in nodes]
    return tuple(
        (str(n.get("node_id")), f"{e.get('state', '')} {e.get('phase', '')}")
        for n, e in envs
        if isinstance(e, dict) and e
    )


def progress_line(doc: dict[str, Any], now: datetime | None = None) -> str:
    """One line for a status document: state, mini-batches done of total, failures, time,
    and the environment builds under way."""
    state = str(doc.get("state") or "?")
    failed = _int(doc, "failed_mbs")
    done = _int(doc, "succeeded_mbs") + failed
    total = doc.get("total_mbs")
    if isinstance(total, int) and total > 0:
        count = f"{done} of {total} mini-batches ({100 * done // total}%)"
    elif _int(doc, "planned_mbs"):
        count = f"{done} of {_int(doc, 'planned_mbs')}+ mini-batches"
    else:
        count = f"{done} mini-batches"
    parts = [f"{state}: {count}", f"{failed} failed"]
    elapsed = doc.get("elapsed_s")
    if isinstance(elapsed, int | float):
        parts.append(f"elapsed {format_duration(elapsed)}")
    eta = doc.get("eta_s")
    if state == "Running" and isinstance(eta, int | float):
        parts.append(f"ETA {format_duration(eta)}")
    build = building(doc, now) if state in ("Running", "Queued", "Starting") else ""
    return ", ".join(parts) + (f"; {build}" if build else "")


class ProgressView(Protocol):
    def show(self, doc: dict[str, Any]) -> None: ...
    def note(self, line: str) -> None: ...
    def close(self) -> None: ...


def write_line(text: str) -> None:
    """A line on stdout; once the reader has gone (``prsd run ... | head``) the rest is
    dropped: stdout then points at /dev/null, and the job goes on to its end."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


class PlainProgress:
    """Plain lines: the first at once, then one every ``every_s`` seconds."""

    def __init__(
        self,
        write: Callable[[str], None] = write_line,
        every_s: float = PLAIN_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.write = write
        self.every_s = every_s
        self.clock = clock
        self._last: float | None = None
        self._phases: tuple[tuple[str, str], ...] = ()

    def show(self, doc: dict[str, Any]) -> None:
        now = self.clock()
        phases = build_phases(doc)
        if self._last is None or now - self._last >= self.every_s or phases != self._phases:
            self._last, self._phases = now, phases
            self.write(progress_line(doc))

    def note(self, line: str) -> None:
        self.write(line)

    def close(self) -> None:
        pass


class BarProgress:
    """A rich progress bar, drawn from the first second and refreshed in place."""

    def __init__(self, console: Console) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            TextColumn("{task.fields[state]:<9}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("mini-batches"),
            TaskProgressColumn(),
            TextColumn("failed {task.fields[failed]}"),
            TimeElapsedColumn(),
            TextColumn("ETA {task.fields[eta]}"),
            console=console,
            refresh_per_second=4,
        )
        self.task = self.progress.add_task("job", total=None, state="Starting", failed=0, eta="?")
        self.progress.start()
        self._phases: tuple[tuple[str, str], ...] = ()

    def show(self, doc: dict[str, Any]) -> None:
        phases = build_phases(doc)
        if phases != self._phases:
            self._phases = phases
            build = building(doc)
            if build:
                self.note(build)
        failed = _int(doc, "failed_mbs")
        total = doc.get("total_mbs")
        eta = doc.get("eta_s")
        self.progress.update(
            self.task,
            completed=_int(doc, "succeeded_mbs") + failed,
            total=total if isinstance(total, int) and total > 0 else None,
            state=str(doc.get("state") or "?"),
            failed=failed,
            eta=format_duration(eta) if isinstance(eta, int | float) else "-",
        )

    def note(self, line: str) -> None:
        self.progress.console.print(line, markup=False, highlight=False)

    def close(self) -> None:
        self.progress.stop()


def progress_view() -> ProgressView:
    """A bar on a terminal, plain lines anywhere else."""
    from prsd.cli import console

    if sys.stdout.isatty():
        return BarProgress(console.out)
    return PlainProgress()
