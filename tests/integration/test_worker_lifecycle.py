"""A real worker's life: hello, init, the script's environment, shutdown and exits."""

from __future__ import annotations

import json
import os
import pstats
import signal
import socket
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

from prsd.wire.protocol import (
    EXIT_AGENT_GONE,
    EXIT_INIT_FAILED,
    EXIT_PROTOCOL_ERROR,
    HEADER,
)
from prsd.worker.launch import worker_command
from tests.helpers import wait_until
from tests.integration.worker_driver import (
    FRAME_TIMEOUT_S,
    WorkerPaths,
    files_mb,
    read_text,
    ready_worker,
    start_worker,
)

if TYPE_CHECKING:
    from pathlib import Path

SIMPLE = """
def run(mini_batch):
    return mini_batch
"""


def test_ready_after_init(tmp_path: Path) -> None:
    """init() runs before ready; ready carries the worker's pid and init time."""
    paths = WorkerPaths.under(tmp_path)
    marker = tmp_path / "init-ran"
    paths.write_script(f"""
        def init():
            open({str(marker)!r}, "a").write("init\\n")

        def run(mini_batch):
            return mini_batch
    """)
    with start_worker(paths) as worker:
        worker.send(paths.hello().to_message())
        ready = worker.expect("ready")
        assert ready["pid"] == worker.proc.pid
        assert 0 <= ready["init_s"] < FRAME_TIMEOUT_S
        assert marker.read_text() == "init\n"
        assert worker.shutdown() == 0


def test_init_raising_sends_init_failed_and_exits_72(tmp_path: Path) -> None:
    """An exception in init() answers init_failed, writes the traceback, exits 72."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        def load_model():
            raise ValueError("bad model path")

        def init():
            load_model()

        def run(mini_batch):
            return mini_batch
    """)
    with start_worker(paths) as worker:
        worker.send(paths.hello().to_message())
        failed = worker.expect("init_failed")
        assert worker.wait() == EXIT_INIT_FAILED
    assert failed["error"] == "ValueError: bad model path"
    assert "in load_model" in failed["traceback_tail"]
    assert failed["traceback_tail"].endswith("ValueError: bad model path")
    assert failed["error_file"] == str(paths.error_file)
    text = paths.error_file.read_text()
    first = text.splitlines()[0]
    assert "process000" in first and "init()" in first and first.endswith(":")
    assert "Traceback (most recent call last)" in text and "in init" in text


def test_import_error_of_the_script_fails_init(tmp_path: Path) -> None:
    """A script that cannot be imported fails init with the import's error."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        import no_such_module_for_prsd_tests

        def run(mini_batch):
            return mini_batch
    """)
    with start_worker(paths) as worker:
        worker.send(paths.hello().to_message())
        failed = worker.expect("init_failed")
        assert worker.wait() == EXIT_INIT_FAILED
    assert failed["error"] == (
        "ModuleNotFoundError: No module named 'no_such_module_for_prsd_tests'"
    )
    assert "importing entry script score.py" in paths.error_file.read_text()


def test_parse_args_exit_at_import_fails_init(tmp_path: Path) -> None:
    """A script whose parse_args() exits on an unknown argument fails init, not the host."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        import argparse

        parser = argparse.ArgumentParser()
        parser.add_argument("--model")
        args = parser.parse_args()

        def run(mini_batch):
            return mini_batch
    """)
    with start_worker(paths) as worker:
        worker.send(paths.hello(argv=["--model", "m", "--unexpected", "1"]).to_message())
        failed = worker.expect("init_failed")
        assert worker.wait() == EXIT_INIT_FAILED
    assert failed["error"] == "SystemExit: 2"
    assert "unrecognized arguments: --unexpected 1" in read_text(paths.stderr)


def test_script_without_run_fails_init(tmp_path: Path) -> None:
    """A script that defines no run() fails init saying so."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("def init():\n    pass\n")
    with start_worker(paths) as worker:
        worker.send(paths.hello().to_message())
        failed = worker.expect("init_failed")
        assert worker.wait() == EXIT_INIT_FAILED
    assert failed["error"].startswith("EntryScriptError: ")
    assert "defines no run(mini_batch) function" in failed["error"]


def test_script_sees_azure_worker_environment(tmp_path: Path) -> None:
    """sys.argv, __file__, cwd, sys.path helpers, EntryScript and env vars are Azure's."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("VALUE = 'from code_dir'\n", "shared_helper.py")
    paths.write_script("VALUE = 'next to the script'\n", "src/sibling_helper.py")
    paths.write_script(
        """
        import json, os, sys
        import shared_helper, sibling_helper
        from prsd import EntryScript

        def run(mini_batch):
            es = EntryScript()
            facts = {
                "argv": sys.argv, "file": __file__, "name": __name__, "cwd": os.getcwd(),
                "helpers": [shared_helper.VALUE, sibling_helper.VALUE],
                "agent_name": es.agent_name, "node_id": es.node_id, "job_id": es.job_id,
                "config": es.config, "working_dir": es.working_dir,
                "output_dir": es.output_dir, "log_dir": es.log_dir,
                "faulthandler": os.environ.get("PYTHONFAULTHANDLER"),
                "bi_output": os.environ.get("AZUREML_BI_OUTPUT_PATH"),
            }
            return [json.dumps(facts)]
        """,
        "src/score.py",
    )
    argv = ["--model", str(tmp_path / "model"), "--labels", "x y"]
    hello = paths.hello(entry_script="src/score.py", argv=argv)
    with ready_worker(paths, hello) as worker:
        outcome = worker.run(files_mb(0, ["/data/a.png"]))
        assert worker.shutdown() == 0
    assert outcome["status"] == "succeeded"
    facts = json.loads(paths.out.read_text())
    script = str(paths.code_dir / "src" / "score.py")
    assert facts["argv"] == [script, *argv]
    assert facts["file"] == script
    assert facts["name"] == "src.score"
    assert facts["cwd"] == str(paths.working_dir)
    assert facts["helpers"] == ["from code_dir", "next to the script"]
    assert (facts["agent_name"], facts["node_id"], facts["job_id"]) == ("process000", "0", "job-1")
    assert facts["config"] == {"name": "test-job"}
    assert facts["working_dir"] == str(paths.working_dir)
    assert facts["output_dir"] == str(paths.output_dir)
    assert facts["log_dir"] == str(paths.log_dir)
    assert facts["faulthandler"] == "1"
    assert facts["bi_output"] == str(paths.output_dir)


def test_azureml_user_entry_script_with_parse_known_args_at_import(tmp_path: Path) -> None:
    """A migrated script parsing arguments at import time gets its arguments."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        import argparse
        from azureml_user.parallel_run import EntryScript
        from prsd import EntryScript as PrsdEntryScript

        parser = argparse.ArgumentParser(allow_abbrev=False, description="ParallelRunStep Agent")
        parser.add_argument("--model_name", required=True)
        args, unknown_args = parser.parse_known_args()
        logger = EntryScript().logger

        def init():
            assert EntryScript() is PrsdEntryScript() is EntryScript()
            logger.info("model %s, unknown %s", args.model_name, unknown_args)

        def run(mini_batch):
            return ["%s %s" % (args.model_name, EntryScript().agent_name)]
    """)
    argv = ["--model_name", "iris", "--mini_batch_size", "10"]
    with ready_worker(paths, paths.hello(argv=argv)) as worker:
        worker.run(files_mb(0, ["/data/a.csv"]))
        assert worker.shutdown() == 0
    assert paths.out.read_text() == "iris process000\n"
    assert "model iris, unknown ['--mini_batch_size', '10']" in paths.entry_log_file.read_text()


def test_dotted_module_entry_script(tmp_path: Path) -> None:
    """entry_script may name a module in the code folder (batch_score.main)."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("", "batch_score/__init__.py")
    paths.write_script(
        """
        import sys
        from . import util

        def run(mini_batch):
            return [util.tag(p) + " " + sys.argv[0] for p in mini_batch]
        """,
        "batch_score/main.py",
    )
    paths.write_script("def tag(p):\n    return 'tagged:' + p\n", "batch_score/util.py")
    with ready_worker(paths, paths.hello(entry_script="batch_score.main")) as worker:
        worker.run(files_mb(0, ["/a"]))
    main = paths.code_dir / "batch_score" / "main.py"
    assert paths.out.read_text() == f"tagged:/a {main}\n"


def test_shutdown_called_once_then_bye_and_exit_0(tmp_path: Path) -> None:
    """shutdown() runs exactly once, on the shutdown frame, then bye and exit 0."""
    paths = WorkerPaths.under(tmp_path)
    record = tmp_path / "calls.txt"
    paths.write_script(f"""
        def _note(what):
            with open({str(record)!r}, "a") as f:
                f.write(what + "\\n")

        def init():
            _note("init")

        def run(mini_batch):
            _note("run")
            return mini_batch

        def shutdown():
            _note("shutdown")
    """)
    with ready_worker(paths) as worker:
        worker.run(files_mb(0, ["/a"]))
        worker.run(files_mb(1, ["/b"]))
        assert worker.shutdown() == 0
    assert record.read_text().split() == ["init", "run", "run", "shutdown"]


def test_shutdown_raising_is_logged_and_exit_is_0(tmp_path: Path) -> None:
    """An exception in shutdown() goes to the error file; the worker still exits 0."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        def run(mini_batch):
            return mini_batch

        def shutdown():
            raise RuntimeError("cleanup failed")
    """)
    with ready_worker(paths) as worker:
        assert worker.shutdown() == 0
    text = paths.error_file.read_text()
    assert "shutdown():" in text and "RuntimeError: cleanup failed" in text


def test_closed_channel_ends_worker_without_shutdown(tmp_path: Path) -> None:
    """The agent going away (socket closed) ends the worker at once, skipping shutdown()."""
    paths = WorkerPaths.under(tmp_path)
    marker = tmp_path / "shutdown-ran"
    paths.write_script(f"""
        def run(mini_batch):
            return mini_batch

        def shutdown():
            open({str(marker)!r}, "w").close()
    """)
    with ready_worker(paths) as worker:
        worker.sock.close()
        assert worker.wait() == EXIT_AGENT_GONE
    assert not marker.exists()


def test_malformed_frame_exits_70(tmp_path: Path) -> None:
    """A frame that is not JSON ends the worker with the protocol-error code."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script(SIMPLE)
    with ready_worker(paths) as worker:
        body = b"{not json"
        worker.sock.sendall(HEADER.pack(len(body)) + body)
        assert worker.wait() == EXIT_PROTOCOL_ERROR
    assert "protocol error: undecodable frame" in read_text(paths.stderr)


def test_unknown_op_exits_70(tmp_path: Path) -> None:
    """A well-formed frame with an unknown op is a protocol error too."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script(SIMPLE)
    with ready_worker(paths) as worker:
        worker.send({"op": "dance"})
        assert worker.wait() == EXIT_PROTOCOL_ERROR
    assert "unexpected frame 'dance'" in read_text(paths.stderr)


def test_hello_missing_keys_exits_70(tmp_path: Path) -> None:
    """A hello without its required keys is refused before anything is imported."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script(SIMPLE)
    with start_worker(paths) as worker:
        worker.send({"op": "hello", "job_id": "j"})
        assert worker.wait() == EXIT_PROTOCOL_ERROR
    assert "hello frame lacks node_id" in read_text(paths.stderr)


def _state(pid: int) -> str:
    """The process's state letter from /proc ("" when gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return ""


def test_worker_dies_with_its_parent(tmp_path: Path) -> None:
    """A worker busy in init() whose spawning process is killed gets SIGKILL (PDEATHSIG)."""
    paths = WorkerPaths.under(tmp_path)
    marker = tmp_path / "in-init"
    paths.write_script(f"""
        import time

        def init():
            open({str(marker)!r}, "w").close()
            time.sleep(600)

        def run(mini_batch):
            return mini_batch
    """)
    spawner = textwrap.dedent("""
        import json, socket, subprocess, sys
        from prsd.wire import protocol
        from prsd.worker.launch import worker_command
        ours, theirs = socket.socketpair()
        proc = subprocess.Popen(
            worker_command(None, theirs.fileno()),
            pass_fds=(theirs.fileno(),),
            stdout=subprocess.DEVNULL,
        )
        theirs.close()
        ours.sendall(protocol.encode(json.loads(sys.argv[1])))
        print(proc.pid, flush=True)
        sys.stdin.read()
    """)
    hello = json.dumps(paths.hello().to_message())
    worker_pid = 0
    with subprocess.Popen(
        [sys.executable, "-c", spawner, hello],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    ) as parent:
        try:
            assert parent.stdout is not None
            worker_pid = int(parent.stdout.readline())
            wait_until(marker.exists, FRAME_TIMEOUT_S, "the worker to be in init()")
            parent.kill()
            parent.wait(FRAME_TIMEOUT_S)
            wait_until(lambda: _state(worker_pid) in ("", "Z"), FRAME_TIMEOUT_S, "worker death")
        finally:
            if parent.poll() is None:
                parent.kill()
            if worker_pid and _state(worker_pid) not in ("", "Z"):
                os.kill(worker_pid, signal.SIGKILL)


def test_worker_exits_when_parent_pid_is_not_its_parent(tmp_path: Path) -> None:
    """A worker started after its agent died (another parent pid) exits at once."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        proc = subprocess.Popen(
            worker_command(None, theirs.fileno(), parent_pid=1),
            pass_fds=(theirs.fileno(),),
            start_new_session=True,
        )
        try:
            assert proc.wait(FRAME_TIMEOUT_S) == EXIT_AGENT_GONE
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(FRAME_TIMEOUT_S)


def test_cprofile_written_at_shutdown(tmp_path: Path) -> None:
    """With profiling_module cProfile the worker writes pstats data at shutdown."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script("""
        def score_one(path):
            return path.upper()

        def run(mini_batch):
            return [score_one(p) for p in mini_batch]
    """)
    with ready_worker(paths, paths.hello(profiling_module="cProfile")) as worker:
        worker.run(files_mb(0, ["/a", "/b"]))
        assert worker.shutdown() == 0
    stats = pstats.Stats(str(paths.profile_file))
    functions = {name for (_file, _line, name) in stats.stats}  # type: ignore[attr-defined]
    assert {"run", "score_one"} <= functions
