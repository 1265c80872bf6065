"""Check the sales pipeline's forecasts: one line per series, slopes close to the truth.

Usage: check.py PIPELINE_FOLDER (``spool/pipelines/<id>``; default: the newest in ./spool).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> int:
    if len(sys.argv) > 1:
        folder = Path(sys.argv[1])
    else:
        found = sorted(Path("spool/pipelines").glob("sales-pipeline-*"))
        if not found:
            print("check: no sales-pipeline run in ./spool/pipelines", file=sys.stderr)
            return 1
        folder = found[-1]
    record = json.loads((folder / "pipeline.json").read_text())
    jobs = folder.parent.parent / "jobs"
    prepare = jobs / record["steps"]["prepare"]["job_id"]
    forecast = jobs / record["steps"]["forecast"]["job_id"]
    truth = json.loads((prepare / "outputs" / "sales" / "truth.json").read_text())
    lines = (forecast / "outputs" / "forecasts" / "forecasts.txt").read_text().splitlines()
    seen = {}
    for line in lines:
        store, brand, weeks, slope, _ = line.split()
        seen[f"{store}/{brand}"] = (int(weeks), float(slope))
    problems = [f"{k}: no forecast" for k in truth if k not in seen]
    problems += [f"{k}: not a series" for k in seen if k not in truth]
    problems += [
        f"{k}: slope {seen[k][1]} far from {truth[k]:.3f}"
        for k in truth
        if k in seen and abs(seen[k][1] - truth[k]) > 3
    ]
    if len(lines) != len(truth):
        problems.append(f"{len(lines)} lines for {len(truth)} series")
    for p in problems:
        print(f"check: {p}", file=sys.stderr)
    if problems:
        return 1
    print(f"sales-pipeline: {len(lines)} forecasts, every slope within 3 of the truth")
    return 0


if __name__ == "__main__":
    sys.exit(main())
