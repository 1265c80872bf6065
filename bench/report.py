"""Writing a harness run as JSON and as a Markdown table (``bench/results/``)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from importlib import metadata
from typing import TYPE_CHECKING, Any

from bench.diskprobe import create_us

if TYPE_CHECKING:
    from pathlib import Path

    from bench.stats import Row

PACKAGES = ("prsd", "ray", "dask", "distributed", "pandas", "pyarrow", "psutil", "anyio", "numpy")


def machine(scratch: Path | None = None) -> dict[str, Any]:
    """Date, cores, Python and package versions, and the cost of making a file in the
    ``scratch`` folder the runs use (:mod:`bench.diskprobe`): recorded with every table."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "-"
    try:
        strace = subprocess.run(["strace", "-V"], capture_output=True, text=True, check=False)
        versions["strace"] = strace.stdout.split("\n")[0].split()[-1]
    except OSError:
        versions["strace"] = "-"
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "nproc": os.cpu_count(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "versions": versions,
        "scratch": None if scratch is None else str(scratch),
        "file_create_us": None if scratch is None else create_us(scratch),
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _f(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def rows_table(rows: list[Row]) -> str:
    head = (
        "| workload | runner | status | wall s | items/s | mini-batches/s | µs / mini-batch "
        "| first run() s | peak RSS tree MB | prsd own RSS MB | prsd-run / runner "
        "| prsd-daemons / runner | first run() after intake s |"
    )
    lines = [head, "|" + "---|" * 13]
    for r in rows:
        status = r.status if r.status == "ok" else f"**{r.status}**"
        lines.append(
            f"| {r.workload} {r.variant} | {r.runner} | {status} ({r.runs}) | {_f(r.wall_s)} "
            f"| {_f(r.items_per_s)} | {_f(r.mbs_per_s)} | {_f(r.us_per_mb)} "
            f"| {_f(r.first_run_s)} | {_f(r.tree_rss_mb)} | {_f(r.prsd_rss_mb)} "
            f"| {_f(r.ratio_run)} | {_f(r.ratio_daemons)} | {_f(r.after_intake_s)} |"
        )
    notes = [f"- {r.workload} {r.variant} {r.runner}: {r.note}" for r in rows if r.note]
    if notes:
        lines += ["", "Notes:", *[n.replace("\n", " ")[:400] for n in notes]]
    return "\n".join(lines)


def markdown(doc: dict[str, Any], rows: list[Row], goals: list[dict[str, Any]]) -> str:
    m = doc["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items())
    parts = [
        f"# Benchmark: suite {doc['suite']}, {m['date']}",
        "",
        (
            f"{m['nproc']} cores ({m['cpu']}), Python {m['python']}, {m['platform']}; {versions}. "
            f"Scratch folder {m.get('scratch')}: a file made and renamed in "
            f"{_f(m.get('file_create_us'))} µs. "
            f"{doc['repeats']} repeats, alternating; medians; ratios are medians of the per-repeat "
            f"ratios (same run). Total {doc['elapsed_s']:.0f} s."
        ),
        "",
        rows_table(rows),
    ]
    if goals:
        parts += ["", "## Goals (issue 8)", "", "| goal | figure | met |", "|---|---|---|"]
        for g in goals:
            met = {True: "met", False: "**missed**", None: "-"}[g["met"]]
            parts.append(f"| {g['goal']} | {g['figure']} | {met} |")
    for key in ("W6", "W7", "W8", "W9"):
        if key in doc["special"]:
            parts += ["", f"## {key}", "", "```json", json.dumps(doc["special"][key], indent=1)]
            parts.append("```")
    return "\n".join(parts) + "\n"


def write(
    results_dir: Path, doc: dict[str, Any], rows: list[Row], goals: list[dict[str, Any]]
) -> Path:
    """``<suite>-<stamp>.json`` and ``.md``, and ``<suite>-latest.*``; returns the .md path."""
    results_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    doc = {**doc, "rows": [asdict(r) for r in rows], "goals": goals}
    text_json = json.dumps(doc, indent=1, default=str)
    text_md = markdown(doc, rows, goals)
    for stem in (f"{doc['suite']}-{stamp}", f"{doc['suite']}-latest"):
        (results_dir / f"{stem}.json").write_text(text_json, encoding="utf-8")
        (results_dir / f"{stem}.md").write_text(text_md, encoding="utf-8")
    return results_dir / f"{doc['suite']}-{stamp}.md"
