"""run() in a real worker: results, counts, errors, the context, logs and stack dumps."""

from __future__ import annotations

import json
import os
import signal
from typing import TYPE_CHECKING

import pytest

from tests.helpers import wait_until
from tests.integration.worker_driver import (
    FRAME_TIMEOUT_S,
    WorkerPaths,
    files_mb,
    read_text,
    ready_worker,
)

if TYPE_CHECKING:
    from pathlib import Path

FILES = ["/data/a.png", "/data/b.png", "/data/c.png"]


def test_print_flood_does_not_corrupt_the_protocol(tmp_path: Path) -> None:
    """Many print() calls inside run() land in the stdout file, never on the channel."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        def run(mini_batch):
            for i in range(50000):
                print("line", i, "of some chatty user output")
            return mini_batch
    """)
    with ready_worker(paths) as worker:
        first = worker.run(files_mb(0, FILES))
        second = worker.run(files_mb(1, FILES))
        assert worker.shutdown() == 0
    assert first["status"] == second["status"] == "succeeded"
    lines = paths.stdout.read_text().splitlines()
    assert len(lines) == 100000
    assert lines[-1] == "line 49999 of some chatty user output"


def test_mebibyte_on_stderr_does_not_deadlock(tmp_path: Path) -> None:
    """1 MiB written to stderr inside run() neither blocks the worker nor is lost."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        import sys

        def run(mini_batch):
            sys.stderr.write("e" * (1024 * 1024))
            return mini_batch
    """)
    with ready_worker(paths) as worker:
        outcome = worker.run(files_mb(0, FILES))
        assert worker.shutdown() == 0
    assert outcome["status"] == "succeeded"
    assert paths.stderr.read_bytes().count(b"e") >= 1024 * 1024


@pytest.mark.parametrize("level", ["WARNING", "DEBUG"])
def test_root_and_entry_script_loggers_filter_by_level(tmp_path: Path, level: str) -> None:
    """The root logger writes to stdout, EntryScript().logger to its file, both at logging_level."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        import logging
        from azureml_user.parallel_run import EntryScript

        def run(mini_batch):
            logging.getLogger("user.lib").debug("root-debug")
            logging.warning("root-warning")
            logger = EntryScript().logger
            logger.debug("es-debug")
            logger.warning("es-warning")
            return mini_batch
    """)
    with ready_worker(paths, paths.hello(logging_level=level)) as worker:
        worker.run(files_mb(0, FILES))
        assert worker.shutdown() == 0
    stdout = paths.stdout.read_text()
    entry_log = paths.entry_log_file.read_text()
    assert "root-warning" in stdout
    assert ("root-debug" in stdout) == (level == "DEBUG")
    assert ("es-debug" in entry_log) == (level == "DEBUG")
    assert "es-" not in stdout and "root-" not in entry_log
    line = next(x for x in entry_log.splitlines() if x.endswith("|es-warning"))
    fields = line.split("|")
    assert fields[1:4] == ["0_process000", "WARNING", str(fields[3])]
    assert fields[3].isdigit() and fields[4].isdigit()
    assert fields[5] == "run()"


def test_exception_in_run_fails_only_that_mini_batch(tmp_path: Path) -> None:
    """An exception in run() fails the attempt with its traceback; the worker goes on."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        def score(path):
            if path.endswith("bad"):
                return 1 / 0
            return path

        def run(mini_batch):
            return [score(p) for p in mini_batch]
    """)
    with ready_worker(paths) as worker:
        failed = worker.run(files_mb(3, ["/x/ok", "/x/bad"]))
        fine = worker.run(files_mb(4, ["/x/ok"]))
        assert worker.shutdown() == 0
    assert failed["status"] == "failed"
    assert failed["error"] == "ZeroDivisionError: division by zero"
    assert (failed["items"], failed.get("succeeded_items", 0), failed["failed_items"]) == (2, 0, 2)
    assert "in score" in failed["traceback_tail"]
    assert failed["error_file"] == str(paths.error_file)
    assert failed["run_method_s"] >= 0 and failed["start_time"].endswith("Z")
    assert fine["status"] == "succeeded"
    text = paths.error_file.read_text()
    assert "run() on mini-batch 000000003:" in text
    assert "Traceback (most recent call last)" in text and "in score" in text
    assert paths.out.read_text() == "/x/ok\n"


def test_none_result_fails_naming_type_and_mini_batch(tmp_path: Path) -> None:
    """run() returning None fails the attempt with Azure's explanation."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        def run(mini_batch):
            pass
    """)
    with ready_worker(paths) as worker:
        outcome = worker.run(files_mb(42, FILES))
    assert outcome["status"] == "failed"
    assert outcome["error"] == (
        "run() returned NoneType for mini-batch 000000042; "
        "it must return a list, tuple or pandas.DataFrame"
    )
    assert outcome["failed_items"] == 3


def test_fewer_results_count_failed_items(tmp_path: Path) -> None:
    """Fewer elements than inputs: the rest are failed items, the attempt still succeeds."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        def run(mini_batch):
            return mini_batch[:1]
    """)
    with ready_worker(paths) as worker:
        outcome = worker.run(files_mb(0, FILES))
    assert outcome["status"] == "succeeded"
    assert (outcome["items"], outcome["succeeded_items"], outcome["failed_items"]) == (3, 1, 2)
    assert paths.out.read_text() == "/data/a.png\n"


def test_empty_result_succeeds_with_all_items_failed(tmp_path: Path) -> None:
    """[] (Azure's many-models habit) succeeds; every item counts as failed."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        def run(mini_batch):
            return []
    """)
    with ready_worker(paths) as worker:
        outcome = worker.run(files_mb(0, FILES))
    assert outcome["status"] == "succeeded"
    assert outcome["failed_items"] == 3 and "succeeded_items" not in outcome
    assert paths.out.read_bytes() == b""


def test_more_results_are_capped_with_a_warning(tmp_path: Path) -> None:
    """More elements than inputs: succeeded is capped, a warning goes to extra and the log."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        def run(mini_batch):
            return mini_batch + ["extra-1", "extra-2"]
    """)
    with ready_worker(paths) as worker:
        outcome = worker.run(files_mb(7, FILES))
        assert worker.shutdown() == 0
    assert outcome["status"] == "succeeded"
    assert (outcome["items"], outcome["succeeded_items"]) == (3, 3)
    assert outcome.get("failed_items", 0) == 0
    warning = outcome["extra"]["warning"]
    assert outcome["extra"]["returned_items"] == 5
    assert "5 items for mini-batch 000000007" in warning and "input count 3" in warning
    assert warning in paths.entry_log_file.read_text()
    assert paths.out.read_text().splitlines()[-1] == "extra-2"


def test_tuple_result_is_accepted(tmp_path: Path) -> None:
    """A tuple counts and is written like a list."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        def run(mini_batch):
            return tuple(p.upper() for p in mini_batch)
    """)
    with ready_worker(paths) as worker:
        outcome = worker.run(files_mb(0, FILES[:2]))
    assert outcome["status"] == "succeeded" and outcome["succeeded_items"] == 2
    assert paths.out.read_text() == "/DATA/A.PNG\n/DATA/B.PNG\n"


def test_two_parameter_run_receives_the_context(tmp_path: Path) -> None:
    """run(mini_batch, mini_batch_context) gets the key values, the index and dataset None."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        import json

        def run(mini_batch, mini_batch_context):
            return [json.dumps({
                "key": mini_batch_context.partition_key_value,
                "index": mini_batch_context.minibatch_index,
                "dataset": mini_batch_context.dataset,
                "n": len(mini_batch),
            })]
    """)
    with ready_worker(paths) as worker:
        worker.run(files_mb(12, FILES, key={"user": "u1", "genre": "jazz"}))
        worker.run(files_mb(13, FILES[:1]))
    first, second = (json.loads(line) for line in paths.out.read_text().splitlines())
    assert first == {"key": {"user": "u1", "genre": "jazz"}, "index": 12, "dataset": None, "n": 3}
    assert second == {"key": None, "index": 13, "dataset": None, "n": 1}


def test_sigusr1_dumps_the_stack_of_a_hanging_run(tmp_path: Path) -> None:
    """SIGUSR1 during a stuck run() writes every thread's stack, naming the user's function."""
    paths = WorkerPaths.under(tmp_path)
    marker = tmp_path / "in-run"
    paths.write_script(f"""
        import time

        def stuck_in_user_code():
            open({str(marker)!r}, "w").close()
            time.sleep(600)

        def run(mini_batch):
            stuck_in_user_code()
            return mini_batch
    """)
    with ready_worker(paths) as worker:
        worker.send({"op": "run", "mbs": [files_mb(9, FILES)], "out": str(paths.out), "last": True})
        wait_until(marker.exists, FRAME_TIMEOUT_S, "run() to begin")
        os.kill(worker.proc.pid, signal.SIGUSR1)
        wait_until(
            lambda: "while running run() on mini-batch 000000009" in read_text(paths.error_file),
            FRAME_TIMEOUT_S,
            "the stack dump",
        )
    dump = paths.error_file.read_text()
    assert "most recent call first" in dump
    assert "in stuck_in_user_code" in dump and "score.py" in dump


def test_unknown_input_kind_fails_the_mini_batch(tmp_path: Path) -> None:
    """An input kind without a loader fails each mini-batch with an error naming the kind."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        def run(mini_batch):
            return mini_batch
    """)
    with ready_worker(paths, paths.hello(kind="avro")) as worker:
        outcome = worker.run(files_mb(0, FILES))
        assert worker.shutdown() == 0
    assert outcome["status"] == "failed"
    assert outcome["error"].startswith("UnknownInputKind: ")
    assert "input kind 'avro'" in outcome["error"]
    assert outcome["failed_items"] == 3
