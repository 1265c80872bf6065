"""Daemon logs: JSON lines on a pipe (journald), key=value on a terminal, ids on every line."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

CODE = """
import sys
from prsd.logconfig import configure, get_logger, log_context
configure("INFO")
log = get_logger("prsd.test")
assert "structlog" not in sys.modules  # imported on the first line written
with log_context(job_id="job-1", node_id="n1"):
    log.debug("dropped without importing structlog")
assert "structlog" not in sys.modules
with log_context(job_id="job-1", node_id="n1"):
    log.info("task committed", mini_batch="000000042")
log.debug("not shown")
log.warning("outside", node_id="n2")
"""


def test_json_lines_when_stderr_is_a_pipe() -> None:
    """Each line is one JSON object with level, time, event and the bound ids."""
    proc = subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, timeout=60, check=True
    )
    lines = [json.loads(line) for line in proc.stderr.splitlines()]
    assert [ln["event"] for ln in lines] == ["task committed", "outside"]
    first, second = lines
    assert (first["job_id"], first["node_id"], first["mini_batch"]) == ("job-1", "n1", "000000042")
    assert first["level"] == "info" and first["timestamp"].endswith("Z")
    assert "job_id" not in second and second["node_id"] == "n2"


def test_key_value_lines_on_a_terminal() -> None:
    """On a terminal the same events are readable key=value lines."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", CODE], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=secondary,
    )  # fmt: skip
    os.close(secondary)
    chunks = []
    try:
        while True:
            try:
                data = os.read(primary, 4096)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
    finally:
        assert proc.wait(30) == 0
        os.close(primary)
    text = b"".join(chunks).decode()
    assert "task committed" in text and "job_id=job-1" in text and "mini_batch=000000042" in text
    assert not text.lstrip().startswith("{")
