"""A folder of tabular files is a table, through ``prsd run``, as Azure users pass them.

A plain folder (or a ``uri_folder`` input) of ``.csv``, ``.parquet`` or ``.jsonl`` files
with ``mini_batch_size: 64KB`` gets DataFrames; ``partition_keys`` over it groups by
column values; mixed extensions stay files, and a size then names ``input_format``;
``input_format: files`` gives ``run()`` the paths.
"""

from __future__ import annotations

import json
import textwrap
from typing import TYPE_CHECKING

import pandas as pd

from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

KIND = """
    import pandas as pd

    def run(mini_batch, mini_batch_context):
        if isinstance(mini_batch, pd.DataFrame):
            key = mini_batch_context.partition_key_value
            tag = "-".join(str(v) for v in key.values()) if key else "table"
            return [f"{tag} {int(v)}" for v in mini_batch["value"]]
        return ["path " + p.rsplit("/", 1)[-1] for p in mini_batch]
"""


def _job(tmp_path: Path, head: str, *, fmt: str = "csv", rows: int = 3000) -> Path:
    yaml = textwrap.dedent(head) + textwrap.dedent("""
        resources: {max_concurrency_per_instance: 2}
        retry_settings: {max_retries: 0}
        task:
          code: ./code
          entry_script: score.py
          append_row_to: ./outputs/out.txt
    """)
    job = make_job(tmp_path, KIND, yaml)
    data = job / "data"
    (data / "2026").mkdir(parents=True)
    frame = pd.DataFrame({"store": [f"s{i % 3}" for i in range(rows)], "value": range(rows)})
    halves = [("2026/part-0", frame.iloc[: rows // 2]), ("part-1", frame.iloc[rows // 2 :])]
    for name, part in halves:
        if fmt == "csv":
            part.to_csv(data / f"{name}.csv", index=False)
        elif fmt == "parquet":
            part.to_parquet(data / f"{name}.parquet", index=False)
        else:
            part.to_json(data / f"{name}.jsonl", orient="records", lines=True)
    (data / "_SUCCESS").write_text("", encoding="utf-8")
    return job


def test_a_folder_of_csv_files_with_a_size_is_a_table(tmp_path: Path) -> None:
    """mini_batch_size: 64KB over a plain folder of .csv: DataFrames, every row once."""
    job = _job(tmp_path, "input_data: ./data\nmini_batch_size: 64KB\n", rows=40000)
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stderr + r.stdout
    lines = r.output("out.txt").read_text(encoding="utf-8").splitlines()
    assert lines == [f"table {i}" for i in range(40000)]
    assert len(r.report()) > 2, "split by size, not one mini-batch per file"
    assert "read as one csv table" in r.stderr


def test_a_uri_folder_of_parquet_partitions_by_column(tmp_path: Path) -> None:
    """partition_keys over a uri_folder of .parquet files: one mini-batch per store."""
    head = """
        inputs:
          data: {type: uri_folder, path: ./data}
        input_data: ${{inputs.data}}
        partition_keys: [store]
    """
    r = run_prsd(_job(tmp_path, head, fmt="parquet", rows=30), tmp_path / "spool")
    assert r.returncode == 0, r.stderr + r.stdout
    lines = r.output("out.txt").read_text(encoding="utf-8").splitlines()
    assert sorted(lines) == sorted(f"s{i % 3} {i}" for i in range(30))
    assert len(r.report()) == 3


def test_a_folder_of_jsonl_files_is_a_table(tmp_path: Path) -> None:
    """A folder of .jsonl files, no mini_batch_size: DataFrames."""
    r = run_prsd(_job(tmp_path, "input_data: ./data\n", fmt="jsonl", rows=10), tmp_path / "s")
    assert r.returncode == 0, r.stderr + r.stdout
    lines = r.output("out.txt").read_text(encoding="utf-8").splitlines()
    assert lines == [f"table {i}" for i in range(10)]


def test_input_format_files_forces_paths(tmp_path: Path) -> None:
    """input_format: files over a folder of .csv: run() gets the paths."""
    job = _job(tmp_path, "input_data: ./data\ninput_format: files\nmini_batch_size: '5'\n")
    r = run_prsd(job, tmp_path / "spool")
    assert r.returncode == 0, r.stderr + r.stdout
    lines = r.output("out.txt").read_text(encoding="utf-8").splitlines()
    assert sorted(lines) == ["path _SUCCESS", "path part-0.csv", "path part-1.csv"]


def test_mixed_extensions_stay_files_and_a_size_names_input_format(tmp_path: Path) -> None:
    """A .json beside the .csv files: a files input; a size is refused naming input_format."""
    job = _job(tmp_path, "input_data: ./data\nmini_batch_size: 64KB\n")
    (job / "data" / "meta.json").write_text(json.dumps({"a": 1}), encoding="utf-8")
    r = run_prsd(job, tmp_path / "spool")
    assert r.returncode == 2, r.stderr + r.stdout
    assert "mini_batch_size" in r.stderr and "set input_format (csv, parquet or jsonl)" in r.stderr
    counted = _job(tmp_path / "again", "input_data: ./data\nmini_batch_size: '10'\n")
    r = run_prsd(counted, tmp_path / "spool")
    assert r.returncode == 0, r.stderr + r.stdout
    assert "read as files because mini_batch_size is a count" in r.stderr
    lines = r.output("out.txt").read_text(encoding="utf-8").splitlines()
    assert sorted(lines) == ["path _SUCCESS", "path part-0.csv", "path part-1.csv"]
