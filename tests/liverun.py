"""``prsd run`` as a live process: its stdout read line by line as it comes, with times."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from typing import IO, TYPE_CHECKING

import psutil

from tests.helpers import wait_until
from tests.jobkit import PRSD

if TYPE_CHECKING:
    from pathlib import Path


class LiveRun:
    """``prsd run JOB --spool SPOOL`` with stdout read in a thread (stderr to a file)."""

    def __init__(self, job_dir: Path, spool: Path, *args: str, env: dict[str, str] | None = None):
        self.stderr_path = spool.parent / "run.stderr.txt"
        self.errors = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in wait() or kill()
        self.proc = subprocess.Popen(
            [*PRSD, "run", str(job_dir), "--spool", str(spool), *args],
            stdout=subprocess.PIPE,
            stderr=self.errors,
            env=dict(os.environ, PRSD_GPU_COUNT="0", **(env or {})),
        )
        self.lines: list[tuple[float, str]] = []  # (monotonic time, line)
        self.started = time.monotonic()
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[bytes] | None) -> None:
        assert stream is not None
        for raw in stream:
            self.lines.append((time.monotonic(), raw.decode(errors="replace").rstrip("\n")))

    @property
    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)

    @property
    def job_id(self) -> str:
        wait_until(lambda: bool(self.lines), 60, "the job line")
        return self.lines[0][1].split()[1]

    def wait_for_line(self, part: str, timeout_s: float = 60) -> float:
        """Wait for a line containing ``part``; returns when it came."""
        found: list[float] = []

        def seen() -> bool:
            found.extend(t for t, line in self.lines if part in line)
            return bool(found)

        wait_until(seen, timeout_s, f"a line with {part!r} (so far: {self.text!r})")
        return found[0]

    def workers(self) -> list[psutil.Process]:
        """The process's children (the workers, and anything they started)."""
        return psutil.Process(self.proc.pid).children(recursive=True)

    def wait(self, timeout_s: float = 120) -> int:
        try:
            return self.proc.wait(timeout=timeout_s)
        finally:
            self._close()

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close()

    def _close(self) -> None:
        self._reader.join(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.errors.close()


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    """Those of ``procs`` still running (a zombie counts as gone)."""
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out
