"""``prsctl report``: the HTML page rendered by a real headless chromium, and its CSV files."""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from prsd.report.svg import STATUS_COLORS
from tests.integration.pngpixels import colour_counts
from tests.jobkit import RunResult, make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

SCRIPT = """
    import time
    def run(mini_batch):
        time.sleep(0.15)
        if any(p.endswith("item00005.txt") for p in mini_batch):
            raise RuntimeError("item 5 cannot be scored")
        return list(mini_batch)
"""

YAML = """
    name: pictured
    input_data: ./data
    mini_batch_size: "1"
    resources: {max_concurrency_per_instance: 2}
    retry_settings: {max_retries: 1, timeout: 30}
    resource_monitor_interval: 0.3
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return (int(hex_colour[1:3], 16), int(hex_colour[3:5], 16), int(hex_colour[5:7], 16))


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "chromium is needed for this test (Debian: apt-get install -y chromium)"
    return found


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunResult, Path]:
    root = tmp_path_factory.mktemp("report")
    r = run_prsd(make_job(root, SCRIPT, YAML, files=12), root / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stderr + r.stdout
    out = root / "out" / "report.html"
    ctl = subprocess.run(
        [sys.executable, "-m", "prsd.cli.prsctl", "report", r.job_id, "-o", str(out),
         "--spool", str(r.spool)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert ctl.returncode == 0, ctl.stderr
    assert ctl.stdout.split() == [str(out)] + [
        str(out.with_name(f"report.{k}.csv"))
        for k in ("attempts", "throughput", "slowest", "resources")
    ]
    return r, out


def _browser(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}", *args],
        capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip


def test_report_is_self_contained(report: tuple[RunResult, Path]) -> None:
    """No script, no link or source outside the file."""
    html = report[1].read_text()
    assert "<script" not in html
    assert not re.search(r"\b(src|href)=", html)
    assert set(re.findall(r"https?://[^\"' ]+", html)) == {"http://www.w3.org/2000/svg"}


def test_chromium_renders_every_part(report: tuple[RunResult, Path], tmp_path: Path) -> None:
    """The DOM chromium builds has each chart; the screenshot shows the status colours."""
    _, html = report
    dom = _browser(tmp_path, "--dump-dom", html.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = dom.stdout
    for ident in ('id="summary"', 'id="gantt"', 'id="throughput"', 'id="slowest"',
                  'id="resources"', 'id="res-n1"', 'id="first-error"'):  # fmt: skip
        assert ident in page, ident
    assert page.count('class="attempt failed"') == 2
    assert 'class="attempt succeeded"' in page
    assert ">n1/process000<" in page and ">n1/process001<" in page
    assert page.count("<tr><td>0000000") == 13  # the slowest table: all 13 attempts (< 20)
    shot = tmp_path / "shot.png"
    taken = _browser(tmp_path, "--window-size=1200,900", f"--screenshot={shot}", html.as_uri())
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    colours = colour_counts(shot)
    assert colours[_rgb(STATUS_COLORS["succeeded"])] > 500
    assert colours[_rgb(STATUS_COLORS["failed"])] > 20
    assert colours[_rgb("#1f77b4")] > 50  # the throughput line


def test_csv_files_hold_the_same_data(report: tuple[RunResult, Path]) -> None:
    """attempts.csv has every attempt of the job; the others parse and add up."""
    run, html = report

    def rows(kind: str) -> list[dict[str, str]]:
        with open(html.with_name(f"report.{kind}.csv"), newline="") as f:
            return list(csv.DictReader(f))

    attempts = rows("attempts")
    assert len(attempts) == len(run.report()) == 13
    assert sum(a["status"] == "failed" for a in attempts) == 2
    assert all(float(a["end_epoch_s"]) >= float(a["start_epoch_s"]) > 0 for a in attempts)
    tp = rows("throughput")
    width = float(tp[1]["bin_start_epoch_s"]) - float(tp[0]["bin_start_epoch_s"])
    assert round(sum(float(t["attempts_per_s"]) * width for t in tp)) == 13
    slow = rows("slowest")
    assert [float(s["elapsed_s"]) for s in slow] == sorted(
        (float(s["elapsed_s"]) for s in slow), reverse=True
    )
    res = rows("resources")
    assert {r["column"] for r in res} >= {"Cpu Percent", "Memory Used Percent"}
