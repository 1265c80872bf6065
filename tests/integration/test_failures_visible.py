"""Partial output never looks like success: ``Completed with failures`` end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

SCRIPT = """
    def run(mini_batch):
        if any(p.endswith("item00003.txt") for p in mini_batch):
            raise ValueError("item 3 cannot be read")
        return [p.rsplit("/", 1)[-1] for p in mini_batch]
"""

YAML = """
    name: partial
    input_data: ./data
    mini_batch_size: "2"
    resources: {max_concurrency_per_instance: 1}
    retry_settings: {max_retries: 0, timeout: 30}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""


def _ctl(spool: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "prsd.cli.prsctl", *args, "--spool", str(spool)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_failed_mini_batch_ends_completed_with_failures(tmp_path: Path) -> None:
    """Exit 0 as on Azure, but the state, prsd run, status, report and failed_items.txt say so."""
    r = run_prsd(make_job(tmp_path, SCRIPT, YAML, files=6), tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stdout + r.stderr
    listed = r.logs / "sys" / "failed_items.txt"
    result = r.result_text()
    assert result.startswith("Completed with failures\n"), result
    assert "1 of 3 mini-batches failed" in result and str(listed) in result
    assert "First error:" in result and "item 3 cannot be read" in result
    assert "Code snapshot: " in result
    assert "Completed with failures" in r.stdout and str(listed) in r.stdout
    rows = [ln.split("\t") for ln in listed.read_text().splitlines() if not ln.startswith("#")]
    data = sorted(str(p) for p in (tmp_path / "job" / "data").iterdir())
    assert [(row[0], row[1], row[2]) for row in rows] == [
        (data[2], "000000001", "failed"),
        (data[3], "000000001", "failed"),
    ]
    assert "ValueError: item 3 cannot be read" in rows[0][3]
    assert "sys/failed_items.txt" in (r.logs / "readme.txt").read_text()
    doc = json.loads(_ctl(r.spool, "status", r.job_id, "--json").stdout)
    assert doc["state"] == "Completed with failures" and str(listed) in doc["reason"]
    shown = _ctl(r.spool, "status", r.job_id)
    assert "Completed with failures" in shown.stdout and "failed_items.txt" in shown.stdout
    table = _ctl(r.spool, "status").stdout
    assert "Completed with failures" in table
    watched = _ctl(r.spool, "status", r.job_id, "--watch")
    assert watched.returncode == 0, watched.stderr
    html = tmp_path / "report.html"
    assert _ctl(r.spool, "report", r.job_id, "-o", str(html)).returncode == 0
    page = html.read_text()
    assert 'class="state Completed-with-failures"' in page and "#e69a00" in page
