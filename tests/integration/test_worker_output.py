"""append_row bytes from a real worker: offsets, list and DataFrame formats, settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from tests.integration.worker_driver import WorkerPaths, files_mb, ready_worker

if TYPE_CHECKING:
    from pathlib import Path

# AZURE.md section 2: index 10, 11; a field with a space, quotes, a NaN.
AZURE_FRAME = """
import math
import pandas as pd

def azure_frame():
    return pd.DataFrame(
        {
            "name": ["a b.png", "c.png"],
            "n": [7, 2],
            "score": [0.5, math.nan],
            "note": ['say "hi"', "x"],
        },
        index=[10, 11],
    )

def run(mini_batch):
    return azure_frame()
"""
AZURE_BYTES = b'"a b.png" 7 0.5 "say ""hi"""\nc.png 2  x\n'


def _azure_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "name": ["a b.png", "c.png"],
            "n": [7, 2],
            "score": [0.5, float("nan")],
            "note": ['say "hi"', "x"],
        },
        index=[10, 11],
    )


def test_appended_bytes_and_offsets_across_run_frames(tmp_path: Path) -> None:
    """A task's mini-batches append to one out file; offsets and lengths locate each."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        def run(mini_batch):
            return [[p, len(p)] for p in mini_batch] + ["ünïcode ✓", 3.5]
    """)
    batches = [["/a"], ["/bb", "/ccc", "/d"], ["/eeeee"]]
    outcomes = []
    with ready_worker(paths) as worker:
        outcomes += worker.run_task([files_mb(i, batch) for i, batch in enumerate(batches)])
        assert worker.shutdown() == 0
    data = paths.out.read_bytes()
    position = 0
    for outcome, batch in zip(outcomes, batches, strict=True):
        expected = "".join(f"{[p, len(p)]}\n" for p in batch) + "ünïcode ✓\n3.5\n"
        assert outcome.get("offset", 0) == position
        assert outcome["length"] == len(expected.encode())
        assert data[position : position + outcome["length"]] == expected.encode("utf-8")
        position += outcome["length"]
    assert position == len(data)


def test_out_file_reopened_after_close(tmp_path: Path) -> None:
    """After a close, the next run frame writes to its own out file from offset 0."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        def run(mini_batch):
            return mini_batch
    """)
    second_out = paths.out.with_name("task2.res")
    with ready_worker(paths) as worker:
        first = worker.run(files_mb(0, ["/one"]))
        second = worker.run(files_mb(1, ["/two"]), out=second_out)
        third = worker.run(files_mb(2, ["/three"]), out=second_out)
    assert paths.out.read_bytes() == b"/one\n"
    assert second_out.read_bytes() == b"/two\n/three\n"
    assert (first.get("offset", 0), second.get("offset", 0), third["offset"]) == (0, 0, 5)


def test_dataframe_bytes_equal_pandas_to_csv(tmp_path: Path) -> None:
    """A DataFrame is written exactly as to_csv(sep=" ", header=False, index=False)."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script(AZURE_FRAME)
    with ready_worker(paths) as worker:
        outcome = worker.run(files_mb(0, ["/p1", "/p2"]))
    assert outcome["status"] == "succeeded" and outcome["succeeded_items"] == 2
    assert "header" not in outcome
    expected = _azure_frame().to_csv(sep=" ", header=False, index=False).encode()
    assert paths.out.read_bytes() == expected == AZURE_BYTES


def test_dataframe_settings_override_and_header(tmp_path: Path) -> None:
    """settings.json to_csv arguments apply; the header pandas would write is reported."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script(AZURE_FRAME)
    hello = paths.hello(to_csv={"sep": ",", "na_rep": "NA"}, dataframe_header=True)
    with ready_worker(paths, hello) as worker:
        outcome = worker.run(files_mb(0, ["/p1", "/p2"]))
    assert outcome["header"] == "name,n,score,note\n"
    frame = _azure_frame()
    expected = frame.to_csv(sep=",", na_rep="NA", header=False, index=False)
    assert paths.out.read_text() == expected == 'a b.png,7,0.5,"say ""hi"""\nc.png,2,NA,x\n'


def test_summary_only_counts_and_writes_nothing(tmp_path: Path) -> None:
    """summary_only counts the returned elements and touches no out file."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        def run(mini_batch):
            return mini_batch[:2]
    """)
    with ready_worker(paths, paths.hello(output_action="summary_only")) as worker:
        worker.send(
            {"op": "run", "mbs": [files_mb(0, ["/a", "/b", "/c"])], "out": None, "last": True}
        )
        (outcome,) = worker.expect("done")["outcomes"]
        assert worker.shutdown() == 0
    assert (outcome["status"], outcome["succeeded_items"], outcome["failed_items"]) == (
        "succeeded",
        2,
        1,
    )
    assert "length" not in outcome
    assert not paths.out.exists()


def test_unknown_append_row_format_is_refused_per_mini_batch(tmp_path: Path) -> None:
    """An append_row_format the worker does not know fails the mini-batch clearly."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        def run(mini_batch):
            return mini_batch
    """)
    with ready_worker(paths, paths.hello(append_row_format="orc")) as worker:
        outcome = worker.run(files_mb(0, ["/a"]))
    assert outcome["status"] == "failed"
    assert outcome["error"] == (
        "UnsupportedOutput: append_row_format 'orc' is not supported by this worker yet"
    )
