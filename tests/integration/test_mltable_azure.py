"""MLTable folders read as Azure reads them: prsd's rows against the real ``mltable`` package.

Each case is a real MLTable folder. ``prsd run`` gives the entry script its mini-batches;
the script writes every row it sees (columns, dtype kinds, values). The same folder is
loaded with ``mltable.load(folder).to_pandas_dataframe()`` by the ``mltable`` package
from PyPI, in its own virtual environment (``.venv-mltable``, made by ``.ci/run``; its
dependencies pin other versions of pyarrow than prsd's), and both tables must be equal.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.fleet import Fleet
from tests.helpers import wait_until
from tests.jobkit import make_job, run_prsd

ROOT = Path(__file__).resolve().parents[2]
MLTABLE_PYTHON = os.environ.get("PRSD_MLTABLE_PYTHON") or str(ROOT / ".venv-mltable/bin/python")

ROWS = """
    import json
    import math

    def _plain(value):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        return value.item() if hasattr(value, "item") else value

    def run(mini_batch):
        kinds = [str(mini_batch[c].dtype.kind) for c in mini_batch.columns]
        return [
            json.dumps({"columns": [str(c) for c in mini_batch.columns], "kinds": kinds,
                        "row": [_plain(v) for v in row]}, default=str)
            for row in mini_batch.itertuples(index=False)
        ]
"""

REFERENCE = """
import json, math, sys
import mltable
frame = mltable.load(sys.argv[1]).to_pandas_dataframe()
def plain(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return v.item() if hasattr(v, "item") else v
kinds = [str(frame[c].dtype.kind) for c in frame.columns]
for row in frame.itertuples(index=False):
    print(json.dumps({"columns": [str(c) for c in frame.columns], "kinds": kinds,
                      "row": [plain(v) for v in row]}, default=str))
"""

JOB = """
    inputs:
      table: {type: mltable, path: ./table}
    input_data: ${{inputs.table}}
    mini_batch_size: "300"  # bytes: several mini-batches even for the small cases
    resources: {max_concurrency_per_instance: 2}
    retry_settings: {max_retries: 0}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/rows.txt
"""


def _sales(folder: Path) -> None:
    """Azure's OJ layout: one CSV per store and brand, some empty fields."""
    for store in (1000, 1001):
        for brand in ("dominicks", "tropicana"):
            part = folder / f"Store{store}" / brand
            part.mkdir(parents=True)
            lines = ["week,quantity,price,note"]
            for week in range(40):
                note = "" if week % 7 == 0 else f"w{week}"
                lines.append(f"{week},{store + week * 3},{1.5 + week / 10:.2f},{note}")
            (part / "data.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


OJ = """
paths:
  - pattern: ./**/*.csv
transformations:
  - read_delimited:
      delimiter: ","
      header: all_files_same_headers
      encoding: utf8
      empty_as_string: false
      include_path_column: true
  - extract_columns_from_partition_format:
      partition_format: "Store{store}/{brand}/data.csv"
  - drop_columns: [note]
"""

ROWS_STEPS = """
paths:
  - folder: ./Store1000
  - folder: ./Store1001
transformations:
  - read_delimited:
      header: all_files_same_headers
      empty_as_string: true
  - skip: 3
  - filter: 'col("quantity") > 1010'
  - keep_columns: [week, quantity, note]
  - take: 100
  - convert_column_types:
      - columns: [quantity]
        column_type: float
      - columns: week
        column_type: string
"""


def _json_lines(folder: Path) -> None:
    rows = [{"id": i, "city": ["Paris", "Lyon", None][i % 3], "score": i / 4} for i in range(60)]
    folder.mkdir(parents=True)
    (folder / "a.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows[:30]), encoding="utf-8"
    )
    (folder / "b.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows[30:]), encoding="utf-8"
    )


JSONL = """
paths:
  - pattern: ./*.jsonl
transformations:
  - read_json_lines:
      include_path_column: true
  - filter: 'col("city") == "Paris"'
  - drop_columns: score
"""


def _parquet(folder: Path) -> None:
    import pandas as pd

    folder.mkdir(parents=True)
    frame = pd.DataFrame({"k": [f"k{i % 4}" for i in range(80)], "v": list(range(80))})
    frame.iloc[:50].to_parquet(folder / "p1.parquet", index=False)
    frame.iloc[50:].to_parquet(folder / "p2.parquet", index=False)


PARQUET = """
paths:
  - file: ./p1.parquet
  - file: ./p2.parquet
transformations:
  - read_parquet: {}
  - skip: 45
  - take: 20
"""


def _headers(folder: Path) -> None:
    """Three files, the last with other header names: which names win depends on header."""
    folder.mkdir(parents=True)
    (folder / "f1.csv").write_text("a,b\n1,x\n2,y\n", encoding="utf-8")
    (folder / "f2.csv").write_text("a,b\n3,z\n", encoding="utf-8")
    (folder / "f3.csv").write_text("c,d\n5,w\n", encoding="utf-8")


HEADERS = """
paths:
  - pattern: ./*.csv
transformations:
  - read_delimited:
      header: HEADER
  - skip: 0
"""


def _reference(folder: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [MLTABLE_PYTHON, "-c", REFERENCE, str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.parametrize(
    ("make", "mltable"),
    [
        (_sales, OJ),
        (_sales, ROWS_STEPS),
        (_json_lines, JSONL),
        (_parquet, PARQUET),
        (_headers, HEADERS.replace("HEADER", "all_files_same_headers")),
        (_headers, HEADERS.replace("HEADER", "from_first_file")),
        (_headers, HEADERS.replace("HEADER", "no_header")),
    ],
    ids=[
        "oj-pattern-partition-format",
        "skip-filter-keep-take-convert",
        "jsonl",
        "parquet",
        "same-headers",
        "from-first-file",
        "no-header",
    ],
)
def test_rows_match_the_mltable_package(tmp_path: Path, make: Any, mltable: str) -> None:
    """Columns, their kinds, rows and order are those mltable.load(...) gives."""
    job = make_job(tmp_path, ROWS, JOB)
    make(job / "table")
    (job / "table" / "MLTable").write_text(textwrap.dedent(mltable), encoding="utf-8")
    expected = _reference(job / "table")
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stderr + r.stdout
    seen = [json.loads(line) for line in r.output("rows.txt").read_text().splitlines()]
    assert expected, "the reference table is not empty"
    assert len(r.report()) > 1 or len(expected) < 10, "several mini-batches"
    assert [s["columns"] for s in seen] == [e["columns"] for e in expected]
    assert [s["kinds"] for s in seen] == [e["kinds"] for e in expected]
    assert [s["row"] for s in seen] == [e["row"] for e in expected]


def test_an_unsupported_transformation_fails_naming_it_and_the_file(tmp_path: Path) -> None:
    """random_split is not applied by prsd: the job is refused, never run without it."""
    job = make_job(tmp_path, ROWS, JOB)
    _sales(job / "table")
    text = OJ + "  - random_split: {percent: 0.5, seed: 7}\n"
    (job / "table" / "MLTable").write_text(text, encoding="utf-8")
    r = run_prsd(job, tmp_path / "spool")
    assert r.returncode == 2, r.stderr + r.stdout
    assert "random_split" in r.stderr and str(job / "table" / "MLTable") in r.stderr, r.stderr


GROUPS = """
    def run(mini_batch, mini_batch_context):
        key = mini_batch_context.partition_key_value
        return [f"{key['store']} {key['brand']} {len(mini_batch)} {int(mini_batch['quantity'].sum())}"]
"""


def test_partition_keys_group_the_transformed_rows(tmp_path: Path) -> None:
    """Azure's many-models layout: partition columns from the paths, then one mini-batch
    per (store, brand), each with exactly the rows mltable gives for that pair."""
    job = make_job(
        tmp_path, GROUPS, JOB.replace('mini_batch_size: "300"', "partition_keys: [store, brand]")
    )
    _sales(job / "table")
    (job / "table" / "MLTable").write_text(textwrap.dedent(OJ), encoding="utf-8")
    expected: dict[tuple[str, str], list[int]] = {}
    for e in _reference(job / "table"):
        row = dict(zip(e["columns"], e["row"], strict=True))
        expected.setdefault((row["store"], row["brand"]), []).append(int(row["quantity"]))
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stderr + r.stdout
    lines = r.output("rows.txt").read_text().splitlines()
    assert lines == [f"{s} {b} {len(q)} {sum(q)}" for (s, b), q in expected.items()]


SLOW_ROWS = ROWS.replace(
    "def run(mini_batch):", "def run(mini_batch):\n        time.sleep(0.2)"
).replace("import json\n", "import json\n    import time\n")


def test_a_restarted_leader_keeps_the_transformed_rows_exactly_once(tmp_path: Path) -> None:
    """The leader killed (SIGKILL) while the workers read its transformed files: a new
    leader plans the same files again, and the output holds mltable's rows once each."""
    fleet = Fleet(tmp_path / "spool", tmp_path / "daemon-logs")
    try:
        fleet.leader()
        fleet.agent("n1", "--slots", "2")
        job = make_job(tmp_path, SLOW_ROWS, JOB)
        _sales(job / "table")
        (job / "table" / "MLTable").write_text(textwrap.dedent(ROWS_STEPS), encoding="utf-8")
        expected = _reference(job / "table")
        job_id = fleet.submit(job)
        done = fleet.spool / "jobs" / job_id / "logs" / "sys" / "job_report"
        report = done / "processed_mini-batches.csv"
        wait_until(lambda: report.exists() and len(report.read_text().splitlines()) > 3, 90, "work")
        fleet.kill("leader")
        assert fleet.final(job_id) is None, "killed while the job ran"
        fleet.leader()
        wait_until(lambda: fleet.final(job_id) is not None, 120, "the job to end")
        final = fleet.final(job_id)
        assert final is not None and final["state"] == "Completed", final
        out = fleet.spool / "jobs" / job_id / "outputs" / "rows.txt"
        seen = [json.loads(line) for line in out.read_text().splitlines()]
        assert [s["row"] for s in seen] == [e["row"] for e in expected]
    finally:
        fleet.close()
