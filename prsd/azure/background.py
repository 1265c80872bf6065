"""A pipeline file run by a background ``prsd run`` (the SDKs' local mode).

Guarantees: ``prsd run FILE --spool SPOOL --name NAME`` is started in a session of its
own (it outlives the caller's Ctrl-C and runs to the pipeline's end), its output going
to ``<folder>/prsd-run.log``; the pipeline's id is read from that log's ``pipeline ID``
line. Used by v1's ``"local": true`` and v2's ``MLClient(local=True)``.

Errors: ``ValueError`` with the log's text when prsd refuses the file (the process
ended before naming a pipeline); ``TimeoutError`` (the process killed) when no id
came within ``timeout_s``.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

START_TIMEOUT_S = 120.0
LOG_NAME = "prsd-run.log"


def run_in_background(
    file: Path, spool: Path, name: str, folder: Path, timeout_s: float = START_TIMEOUT_S
) -> tuple[str, subprocess.Popen[bytes]]:
    """Start ``prsd run`` of ``file``; (the pipeline's id, the process)."""
    log = folder / LOG_NAME
    argv = [sys.executable, "-m", "prsd.daemon", "run", str(file), "--spool", str(spool)]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*argv, "--name", name],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = log.read_text(encoding="utf-8", errors="replace")
        found = re.search(r"^pipeline (\S+)$", text, re.MULTILINE)
        if found:
            return found.group(1), proc
        if proc.poll() is not None:
            raise ValueError(f"prsd refused the pipeline ({file}): {text.strip()}")
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    raise TimeoutError(f"prsd run did not start the pipeline within {timeout_s:.0f} s; see {log}")
