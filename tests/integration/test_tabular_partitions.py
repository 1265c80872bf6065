"""partition_keys, MLTable folders and folder partitions through ``prsd run``."""

from __future__ import annotations

import csv
import textwrap
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

GROUP_SUMMARY = """
    import pandas as pd

    def run(mini_batch, mini_batch_context):
        key = mini_batch.attrs["partition_key_value"]
        assert key == mini_batch_context.partition_key_value, (key, mini_batch_context)
        return pd.DataFrame({
            "store": [key["store"]],
            "brand": [key["brand"]],
            "rows": [len(mini_batch)],
            "quantity": [int(mini_batch["quantity"].sum())],
            "weeks": [" ".join(str(w) for w in mini_batch["week"])],
        })
"""


def _yaml(input_data: str, extra: str) -> str:
    return (
        textwrap.dedent(f"""
        input_data: {input_data}
        resources: {{max_concurrency_per_instance: 2}}
        retry_settings: {{max_retries: 0}}
    """)
        + textwrap.dedent(extra)
        + textwrap.dedent("""
        task:
          code: ./code
          entry_script: score.py
          append_row_to: ./outputs/out.txt
    """)
    )


def _sales(path: Path, first_week: int, rows: list[tuple[str, str, int]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["store", "brand", "week", "quantity"])
        for i, (store, brand, quantity) in enumerate(rows):
            writer.writerow([store, brand, first_week + i, quantity])


def _expected(files: list[tuple[int, list[tuple[str, str, int]]]]) -> bytes:
    groups: dict[tuple[str | None, str], list[tuple[int, int]]] = {}
    for first_week, rows in files:
        for i, (store, brand, quantity) in enumerate(rows):
            groups.setdefault((store or None, brand), []).append((first_week + i, quantity))
    frame = pd.DataFrame(
        [
            (store, brand, len(v), sum(q for _, q in v), " ".join(str(w) for w, _ in v))
            for (store, brand), v in groups.items()
        ]
    )
    return frame.to_csv(sep=" ", header=False, index=False).encode()


def test_csv_partition_keys_group_across_files(tmp_path: Path) -> None:
    """One mini-batch per (store, brand) across three files, each holding exactly its
    group's rows in input order; nulls and mixed-looking values are keys too."""
    job = make_job(
        tmp_path,
        GROUP_SUMMARY,
        _yaml("./data", "input_format: csv\npartition_keys: [store, brand]\n"),
    )
    data = job / "data"
    data.mkdir()
    files = [
        (1, [("1", "a", 5), ("2", "a", 1), ("1", "a", 2), ("", "b", 7), ("1", "7", 3)]),
        (100, [("2", "a", 4), ("1", "a", 1), ("", "b", 2)]),
        (200, [("3", "a", 9), ("1", "7", 1), ("2", "a", 1), ("2.5", "a", 6)]),
    ]
    for i, (first_week, rows) in enumerate(files):
        _sales(data / f"sales{i}.csv", first_week, rows)
    r = run_prsd(job, tmp_path / "spool")
    assert r.returncode == 0, r.stderr + r.stdout
    assert r.output("out.txt").read_bytes() == _expected(files)
    report = r.report()
    assert len(report) == 6
    assert sum(int(row["items"]) for row in report) == 12
    assert list((r.job / "partitions" / "groups").iterdir()), "groups spilled to the job folder"


def test_parquet_partition_keys_values_are_text(tmp_path: Path) -> None:
    """Integer keys of a Parquet table arrive as text, as Azure gives them."""
    script = """
        def run(mini_batch, mini_batch_context):
            key = mini_batch_context.partition_key_value
            return [f"{key['store']!r} {len(mini_batch)} {list(mini_batch['week'])}"]
    """
    job = make_job(
        tmp_path, script, _yaml("./data", "input_format: parquet\npartition_keys: [store]\n")
    )
    data = job / "data"
    data.mkdir()
    for i in range(2):
        table = pa.table({"store": [1, 2, 1, None], "week": [i * 10 + w for w in range(4)]})
        pq.write_table(table, data / f"t{i}.parquet", row_group_size=2)
    r = run_prsd(job, tmp_path / "spool")
    assert r.returncode == 0, r.stderr + r.stdout
    assert r.output("out.txt").read_text().splitlines() == [
        "'1' 4 [0, 2, 10, 12]",
        "'2' 2 [1, 11]",
        "None 2 [3, 13]",
    ]


def test_mltable_folder_with_delimiter_and_path_column(tmp_path: Path) -> None:
    """An Azure v2 mltable input: paths pattern, read_delimited options, Path column."""
    script = """
        import os
        def run(mini_batch):
            out = mini_batch[["a", "b"]].copy()
            out["file"] = [os.path.basename(p) for p in mini_batch["Path"]]
            return out
    """
    yaml_text = textwrap.dedent("""
        type: parallel
        inputs:
          table: {type: mltable, path: ./table, mode: direct}
        input_data: ${{inputs.table}}
        mini_batch_size: "10"
        task:
          code: ./code
          entry_script: score.py
          append_row_to: ./outputs/out.txt
    """)
    job = make_job(tmp_path, script, yaml_text)
    table = job / "table"
    table.mkdir()
    (table / "MLTable").write_text(
        textwrap.dedent("""
            paths:
              - pattern: ./*.csv
            transformations:
              - read_delimited:
                  delimiter: ";"
                  header: all_files_same_headers
                  include_path_column: true
        """),
        encoding="utf-8",
    )
    (table / "x.csv").write_text("a;b\n1;one\n2;two\n3;three\n", encoding="utf-8")
    (table / "y.csv").write_text("a;b\n4;four\n", encoding="utf-8")
    (table / "notes.txt").write_text("not data\n", encoding="utf-8")
    r = run_prsd(job, tmp_path / "spool")
    assert r.returncode == 0, r.stderr + r.stdout
    assert r.output("out.txt").read_text().splitlines() == [
        "1 one x.csv",
        "2 two x.csv",
        "3 three x.csv",
        "4 four y.csv",
    ]
    assert len(r.report()) == 3, "10 bytes: x.csv in two pieces, y.csv in one"


def test_folder_partitions_group_files_by_path_values(tmp_path: Path) -> None:
    """partition_format + partition_keys on a files input: one mini-batch per
    (user, genre), the files of each group, values as strings."""
    script = """
        import os
        def run(mini_batch, mini_batch_context):
            key = mini_batch_context.partition_key_value
            names = " ".join(os.path.relpath(p, os.path.dirname(os.path.dirname(
                os.path.dirname(p)))) for p in mini_batch)
            return [f"{key['user']} {key['genre']}: {names}"]
    """
    extra = 'partition_format: "{user}/{season}/{genre}.wav"\npartition_keys: [user, genre]\n'
    job = make_job(tmp_path, script, _yaml("./data", extra))
    for rel in ["ann/2020/jazz.wav", "ann/2020/rock.wav", "ann/2021/jazz.wav", "bob/2020/rock.wav"]:
        path = job / "data" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"RIFF")
    (job / "data" / "README").write_text("x", encoding="utf-8")
    r = run_prsd(job, tmp_path / "spool")
    assert r.returncode == 0, r.stderr + r.stdout
    assert r.output("out.txt").read_text().splitlines() == [
        "ann jazz: ann/2020/jazz.wav ann/2021/jazz.wav",
        "ann rock: ann/2020/rock.wav",
        "bob rock: bob/2020/rock.wav",
    ]
