"""A fork server preloads the input loader's modules, so its workers start with them.

A CSV job's worker reads its first mini-batch with pandas, whose import alone takes
0.4 s here. ``prsd run`` asks its fork server to import pandas as the job is submitted,
while the leader takes it in, so a forked worker finds pandas loaded before its entry
script is. Reported by the worker itself, at the import of the entry script (before any
mini-batch is loaded): forked workers of a CSV job have pandas, spawned ones
(``--no-fork-server``) do not, and a files job's forked worker has none preloaded.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

REPORT = """
import json, sys
LOADED_AT_IMPORT = "pandas" in sys.modules

def init():
    report = {"pandas": LOADED_AT_IMPORT, "forked": "prsd.worker.forkserver" in sys.modules}
    print("REPORT " + json.dumps(report), file=sys.stderr, flush=True)

def run(mini_batch):
    return [str(x) for x in range(len(mini_batch))]
"""

YAML = """
type: parallel
name: preload
input_data: {data}
{format}mini_batch_size: "{size}"
resources: {{max_concurrency_per_instance: 1}}
output_action: append_row
append_row_file_name: out.txt
task:
  code: ./code
  entry_script: score.py
"""


def _report(tmp: Path, *args: str, csv: bool) -> dict[str, Any]:
    if csv:
        yaml_text = YAML.format(data="./table/in.csv", format="input_format: csv\n", size="1KB")
        job = make_job(tmp, REPORT, yaml_text)
        (job / "table").mkdir()
        rows = "".join(f"{i},name{i}\n" for i in range(200))
        (job / "table" / "in.csv").write_text("id,name\n" + rows, encoding="utf-8")
    else:
        job = make_job(tmp, REPORT, YAML.format(data="./data", format="", size="1"), files=2)
    result = run_prsd(job, tmp / "spool", *args, env={"PRSD_GPU_COUNT": "0"})
    assert result.returncode == 0, result.stdout + result.stderr
    logs = result.spool / "jobs" / result.job_id / "logs" / "user" / "stderr"
    lines = [ln for p in logs.rglob("*.txt") for ln in p.read_text().splitlines()]
    found = [json.loads(ln[len("REPORT ") :]) for ln in lines if ln.startswith("REPORT ")]
    assert len(found) == 1, lines
    report: dict[str, Any] = found[0]
    return report


def test_a_csv_job_s_forked_worker_starts_with_pandas_a_spawned_one_does_not(
    tmp_path: Path,
) -> None:
    (tmp_path / "forked").mkdir()
    (tmp_path / "spawned").mkdir()
    forked = _report(tmp_path / "forked", csv=True)
    spawned = _report(tmp_path / "spawned", "--no-fork-server", csv=True)
    assert forked == {"pandas": True, "forked": True}
    assert spawned == {"pandas": False, "forked": False}


def test_a_files_job_s_forked_worker_has_nothing_preloaded(tmp_path: Path) -> None:
    assert _report(tmp_path, csv=False) == {"pandas": False, "forked": True}
