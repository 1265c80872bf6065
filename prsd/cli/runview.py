"""What ``prsd run`` and ``prsctl status --watch`` show while a job runs.

On a terminal, ``prsd run`` draws a rich progress bar from its first second; anywhere
else it writes plain lines: one at once, then one every PLAIN_EVERY_S. The lines come
from :func:`progress_line`, a pure function of the job's status document (the same
document ``prsctl status --json`` prints), so the views never look into the spool.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any, Protocol

from prsd.leader.joblogs import format_duration

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

PLAIN_EVERY_S = 5.0


def _int(doc: dict[str, Any], key: str) -> int:
    value = doc.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def progress_line(doc: dict[str, Any]) -> str:
    """One line for a status document: state, mini-batches done of total, failures, time."""
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
    return ", ".join(parts)


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

    def show(self, doc: dict[str, Any]) -> None:
        now = self.clock()
        if self._last is None or now - self._last >= self.every_s:
            self._last = now
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

    def show(self, doc: dict[str, Any]) -> None:
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
