"""Tabular inputs through ``prsd run``: CSV, JSON lines and Parquet by size, real processes."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

IDENTITY = """
    def run(mini_batch):
        return mini_batch
"""


def _yaml(fmt: str, size: str, extra: str = "", out: str = "./outputs/out.txt") -> str:
    return (
        textwrap.dedent(f"""
        input_data: ./data
        input_format: {fmt}
        mini_batch_size: "{size}"
        resources: {{max_concurrency_per_instance: 2}}
        retry_settings: {{max_retries: 0}}
    """)
        + textwrap.dedent(extra)
        + textwrap.dedent(f"""
        task:
          code: ./code
          entry_script: score.py
          append_row_to: {out}
    """)
    )


def _frame(n: int, seed: int, *, long_text: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    text = [f'say "{i}"\nthen more' if i % 7 == 0 else f"word {i}" for i in range(n)]
    if long_text and n:
        text[n // 2] = "x" * long_text
    return pd.DataFrame(
        {"id": np.arange(n) + seed * 1000, "text": text, "score": rng.random(n).round(6)}
    )


def _azure_bytes(frames: list[pd.DataFrame]) -> bytes:
    frame = pd.concat(frames, ignore_index=True)
    return frame.to_csv(sep=" ", header=False, index=False).encode()


def test_csv_by_size_keeps_every_row_in_order(tmp_path: Path) -> None:
    """Files of different sizes, a header-only and an empty file, quoted newlines and a
    row larger than the size: append_row bytes are pandas' of the concatenated table."""
    job = make_job(tmp_path, IDENTITY, _yaml("csv", "1kb"))
    data = job / "data"
    data.mkdir()
    frames = {"a.csv": _frame(120, 1), "c.csv": _frame(9, 3, long_text=5000), "d.csv": _frame(1, 4)}
    for name, frame in frames.items():
        frame.to_csv(data / name, index=False)
    (data / "b.csv").write_text("id,text,score\n", encoding="utf-8")  # header only
    (data / "b2.csv").write_bytes(b"")  # empty
    r = run_prsd(job, tmp_path / "spool")
    assert r.returncode == 0, r.stderr + r.stdout
    assert r.output("out.txt").read_bytes() == _azure_bytes(list(frames.values()))
    rows = r.report()
    cut = (data / "a.csv").stat().st_size // 1024
    assert len(rows) >= cut + 2, "a.csv is cut into pieces of 1 kB; c.csv and d.csv add more"
    assert sum(int(row["items"]) for row in rows) == 130
    assert {row["status"] for row in rows} == {"succeeded"}


def test_jsonl_by_size_with_a_blank_last_line(tmp_path: Path) -> None:
    """JSON lines are cut on lines; a blank last line adds no row and no empty mini-batch."""
    job = make_job(tmp_path, IDENTITY, _yaml("jsonl", "300"))
    data = job / "data"
    data.mkdir()
    frames = [_frame(40, 1), _frame(25, 2)]
    for i, frame in enumerate(frames):
        text = frame.to_json(orient="records", lines=True)
        (data / f"part{i}.jsonl").write_text(text + ("\n" if i else ""), encoding="utf-8")
    r = run_prsd(job, tmp_path / "spool")
    assert r.returncode == 0, r.stderr + r.stdout
    assert r.output("out.txt").read_bytes() == _azure_bytes(frames)
    rows = r.report()
    assert all(int(row["items"]) > 0 for row in rows)
    assert sum(int(row["items"]) for row in rows) == 65


def test_parquet_by_row_groups(tmp_path: Path) -> None:
    """One row group: one mini-batch; ten row groups packed three by three; exact counts."""
    job = make_job(tmp_path, IDENTITY, _yaml("parquet", "1"))
    data = job / "data"
    data.mkdir()
    one, many = _frame(50, 1), _frame(200, 2)
    pq.write_table(pa.Table.from_pandas(one, preserve_index=False), data / "one.parquet")
    pq.write_table(
        pa.Table.from_pandas(many, preserve_index=False), data / "many.parquet", row_group_size=20
    )
    meta = pq.ParquetFile(data / "many.parquet").metadata
    rg_bytes = max(
        sum(meta.row_group(i).column(c).total_compressed_size for c in range(meta.num_columns))
        for i in range(meta.num_row_groups)
    )
    yaml_text = _yaml("parquet", str(rg_bytes * 3))
    (job / "job.yaml").write_text(yaml_text, encoding="utf-8")
    r = run_prsd(job, tmp_path / "spool")
    assert r.returncode == 0, r.stderr + r.stdout
    assert r.output("out.txt").read_bytes() == _azure_bytes([many, one])
    items = [int(row["items"]) for row in sorted(r.report(), key=lambda x: x["mini_batch_id"])]
    assert items[-1] == 50
    assert sum(items[:-1]) == 200
    assert len(items) - 1 in (4, 5), "ten row groups of about rg_bytes, three per mini-batch"


def test_parquet_append_row_format_keeps_types(tmp_path: Path) -> None:
    """append_row_format: parquet writes one typed Parquet file, in mini-batch order."""
    script = """
        def run(mini_batch):
            out = mini_batch[["id", "score"]].copy()
            out["double"] = out["score"] * 2
            return out
    """
    extra = "append_row_format: parquet\n"
    job = make_job(tmp_path, script, _yaml("csv", "500", extra, out="./outputs/scores.parquet"))
    data = job / "data"
    data.mkdir()
    frames = [_frame(60, 1), _frame(30, 2)]
    for i, frame in enumerate(frames):
        frame.to_csv(data / f"p{i}.csv", index=False)
    r = run_prsd(job, tmp_path / "spool")
    assert r.returncode == 0, r.stderr + r.stdout
    got = pq.read_table(r.output("scores.parquet")).to_pandas()
    expected = pd.concat(frames, ignore_index=True)[["id", "score"]]
    expected["double"] = expected["score"] * 2
    pd.testing.assert_frame_equal(got, expected)
    assert len(r.report()) > 2


@pytest.mark.parametrize(("threshold", "code", "state"), [(0, 42, "Failed"), (-1, 0, "Completed")])
def test_malformed_csv_line_is_named(tmp_path: Path, threshold: int, code: int, state: str) -> None:
    """A line with too many fields fails its mini-batch naming file and line; the
    job's mini_batch_error_threshold decides the outcome."""
    extra = f"mini_batch_error_threshold: {threshold}\n"
    job = make_job(tmp_path, IDENTITY, _yaml("csv", "200", extra))
    data = job / "data"
    data.mkdir()
    lines = ["a,b"] + [f"{i},{i * 2}" for i in range(60)]
    lines[37 - 1] = "35,70,extra"  # line 37 of the file
    (data / "bad.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = run_prsd(job, tmp_path / "spool")
    assert r.returncode == code, r.stderr + r.stdout
    result = r.result_text()
    assert result.startswith(state)
    errors = [row["error"] for row in r.report() if row["status"] == "failed"]
    assert len(errors) == 1
    assert f"{data / 'bad.csv'}, line 37" in errors[0]
    if state == "Failed":
        assert "bad.csv, line 37" in result


def test_settings_file_and_dataframe_header(tmp_path: Path) -> None:
    """parallel_run_step.settings.json and --append_row_dataframe_header True: the
    output is pandas' CSV of the whole table, header once at the top."""
    job = make_job(tmp_path, IDENTITY, _yaml("csv", "400"))
    yaml_text = (
        (job / "job.yaml")
        .read_text(encoding="utf-8")
        .replace(
            "  append_row_to:",
            '  program_arguments: "--append_row_dataframe_header True"\n  append_row_to:',
        )
    )
    (job / "job.yaml").write_text(yaml_text, encoding="utf-8")
    (job / "code" / "parallel_run_step.settings.json").write_text(
        '{"append_row": {"pandas.DataFrame.to_csv": {"sep": ","}}}', encoding="utf-8"
    )
    data = job / "data"
    data.mkdir()
    frames = [_frame(50, 1), _frame(20, 2)]
    for i, frame in enumerate(frames):
        frame.to_csv(data / f"p{i}.csv", index=False)
    r = run_prsd(job, tmp_path / "spool")
    assert r.returncode == 0, r.stderr + r.stdout
    expected = pd.concat(frames, ignore_index=True).to_csv(index=False).encode()
    assert r.output("out.txt").read_bytes() == expected
    assert len(r.report()) > 2
