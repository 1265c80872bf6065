"""Small worker-side pieces: hello, launch command, script naming, loaders, EntryScript."""

from __future__ import annotations

import calendar
import logging
import os
import pwd
import sys
import time
from dataclasses import fields
from typing import TYPE_CHECKING, Any

import pytest

import azureml_user.parallel_run
import prsd
from prsd.wire.fields import RecordError
from prsd.wire.hello import Hello
from prsd.wire.protocol import HELLO_KEYS, ProtocolError
from prsd.worker import boot
from prsd.worker.appender import AppendFile
from prsd.worker.entry_script import EntryScript
from prsd.worker.launch import BOOT_PATH, worker_command, worker_env
from prsd.worker.loaders import (
    LOADERS,
    MiniBatchContext,
    MiniBatchRef,
    UnknownInputKind,
    load_mini_batch,
)
from prsd.worker.logs import one_line_error, traceback_tail, utc_timestamp
from prsd.worker.script import is_file_path, module_name_for, positional_parameters

if TYPE_CHECKING:
    from pathlib import Path


def _hello(**fields: Any) -> Hello:
    base: dict[str, Any] = {
        "job_id": "j",
        "node_id": "0",
        "process_name": "process000",
        "code_dir": "/c",
        "entry_script": "score.py",
        "working_dir": "/w",
        "output_dir": "/o",
        "log_dir": "/l",
        "entry_log_file": "/l/process000.log.txt",
        "error_file": "/e/process000.txt",
        "kind": "files",
        "output_action": "append_row",
    }
    base.update(fields)
    return Hello(**base)


def test_hello_fields_are_the_documented_keys() -> None:
    """Hello's fields and protocol.HELLO_KEYS name the same keys."""
    assert {f.name for f in fields(Hello)} == set(HELLO_KEYS)


def test_hello_round_trips_through_a_frame() -> None:
    """What the agent builds is what the worker reads."""
    hello = _hello(argv=["--x", "1"], to_csv={"sep": ","}, dataframe_header=True)
    message = hello.to_message()
    assert message["op"] == "hello"
    assert Hello.from_message(message) == hello


def test_hello_without_a_required_key_is_a_protocol_error() -> None:
    """A hello lacking required keys names them."""
    message = _hello().to_message()
    del message["kind"], message["code_dir"]
    with pytest.raises(ProtocolError, match="lacks code_dir, kind"):
        Hello.from_message(message)


def test_hello_with_a_wrong_type_is_refused_when_built() -> None:
    """The agent learns of a mistyped field when it builds the frame."""
    with pytest.raises(ValueError, match="argv must be a list of strings"):
        _hello(argv="--x 1").to_message()
    with pytest.raises(ValueError, match="dataframe_header must be a bool"):
        _hello(dataframe_header="yes").to_message()


def test_hello_ignores_unknown_keys_and_needs_op() -> None:
    """Unknown keys are ignored (newer agents); a frame that is no hello is refused."""
    message = {**_hello().to_message(), "future_key": 1}
    assert Hello.from_message(message) == _hello()
    with pytest.raises(ProtocolError, match="expected a hello"):
        Hello.from_message({"op": "run"})
    with pytest.raises(ProtocolError, match="end of channel"):
        Hello.from_message(None)


def test_worker_command_runs_boot_by_path() -> None:
    """The command is PYTHON boot.py --fd N --parent-pid P."""
    assert worker_command(None, 5) == [
        sys.executable,
        BOOT_PATH,
        "--fd",
        "5",
        "--parent-pid",
        str(os.getpid()),
    ]
    assert worker_command("/opt/py/bin/python", 7, parent_pid=1)[0] == "/opt/py/bin/python"
    assert os.path.isfile(BOOT_PATH)


def test_worker_env_sets_azure_variables_and_job_variables_win() -> None:
    """PYTHONFAULTHANDLER and AZUREML_BI_OUTPUT_PATH are set; the job's variables win."""
    env = worker_env(
        {"PATH": "/bin", "PYTHONFAULTHANDLER": "0"},
        "/out",
        {"OMP_NUM_THREADS": "1"},
        python="/opt/py/bin/python",
        uid=0,
    )
    assert env == {
        "PATH": "/opt/py/bin:/usr/local/bin:/usr/bin:/bin",
        "HOME": pwd.getpwuid(0).pw_dir,
        "USER": "root",
        "LOGNAME": "root",
        "PYTHONFAULTHANDLER": "1",
        "AZUREML_BI_OUTPUT_PATH": "/out",
        "OMP_NUM_THREADS": "1",
    }
    assert (
        worker_env({}, "/out", {"AZUREML_BI_OUTPUT_PATH": "/x"})["AZUREML_BI_OUTPUT_PATH"] == "/x"
    )


def test_worker_env_is_an_allow_list() -> None:
    """Only locale, time zone and CUDA/NVIDIA variables pass; prsd assigns CUDA_VISIBLE_DEVICES."""
    agent = {
        "SECRET_ROOT_TOKEN": "x",
        "HOME": "/root",
        "LD_PRELOAD": "/tmp/evil.so",
        "PYTHONPATH": "/root/lib",
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "NVIDIA_VISIBLE_DEVICES": "all",
        "CUDA_CACHE_PATH": "/cache",
        "CUDA_VISIBLE_DEVICES": "3",
    }
    env = worker_env(agent, "/out", uid=987654, working_dir="/work/p0")
    assert env["HOME"] == "/work/p0" and env["USER"] == "987654"
    passed = {k for k in agent if k in env}
    assert passed == {"HOME", "LANG", "TZ", "NVIDIA_VISIBLE_DEVICES", "CUDA_CACHE_PATH"}
    assert env["PATH"].endswith(":/usr/local/bin:/usr/bin:/bin")


def test_boot_exposes_only_prsd_and_azureml_user() -> None:
    """The boot finder declines every top-level name but prsd and azureml_user."""
    finder = boot.InstallationFinder(boot.installation_root(), boot.EXPOSED_PACKAGES)
    spec = finder.find_spec("prsd")
    assert spec is not None and spec.origin == prsd.__file__
    assert finder.find_spec("azureml_user") is not None
    assert finder.find_spec("tests") is None and finder.find_spec("json") is None


@pytest.mark.parametrize(
    ("entry", "is_path"),
    [("score.py", True), ("src/score.py", True), ("batch_score.main", False), ("score", False)],
)
def test_entry_script_path_or_module(entry: str, is_path: bool) -> None:
    """A .py name or a path is a file; a dotted name is a module."""
    assert is_file_path(entry) is is_path


@pytest.mark.parametrize(
    ("relative", "name"),
    [("score.py", "score"), ("src/score.py", "src.score"), ("my-code/score.py", "score")],
)
def test_module_name_from_path(relative: str, name: str) -> None:
    """A file's module name is its dotted path (its stem when that is no identifier)."""
    assert module_name_for("/code", os.path.join("/code", relative)) == name


def _one(mini_batch: Any) -> Any:
    return mini_batch


def _two(mini_batch: Any, context: Any) -> Any:
    return context


def _star(*args: Any) -> Any:
    return args


def test_positional_parameters_decide_the_context_argument() -> None:
    """run() gets the context only when it names a second positional parameter."""
    assert positional_parameters(_one) == 1
    assert positional_parameters(_two) == 2
    assert positional_parameters(_star) == 0


def test_files_loader_and_context() -> None:
    """A files payload loads as its list of paths; the context carries key and index."""
    ref = MiniBatchRef.from_json({"i": 4, "p": ["/a", "/b"], "n": 2, "k": {"user": "u"}})
    assert load_mini_batch("files", ref, {}) == ["/a", "/b"]
    context = MiniBatchContext(ref)
    assert (context.partition_key_value, context.minibatch_index, context.dataset) == (
        {"user": "u"},
        4,
        None,
    )
    assert ref.mb_id == "000000004"
    assert "files" in LOADERS


def test_unknown_kind_and_bad_payload_fail_clearly() -> None:
    """No loader for a kind, or a files payload that is no list of paths, is an error."""
    ref = MiniBatchRef.from_json({"i": 1, "p": "not-a-list"})
    with pytest.raises(UnknownInputKind, match="input kind 'avro'"):
        load_mini_batch("avro", ref, {})
    with pytest.raises(TypeError, match="000000001 has no list of paths"):
        load_mini_batch("files", ref, {})
    with pytest.raises(RecordError, match="mini-batch: i is missing"):
        MiniBatchRef.from_json({"p": []})


def test_append_file_offsets_and_reopen(tmp_path: Path) -> None:
    """Appends report (offset, length); another path closes the first file."""
    appender = AppendFile()
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_bytes(b"old")
    assert appender.append(str(first), b"12345") == (3, 5)
    assert appender.append(str(first), b"") == (8, 0)
    assert appender.append(str(second), b"xy") == (0, 2)
    appender.close()
    assert first.read_bytes() == b"old12345" and second.read_bytes() == b"xy"
    with pytest.raises(OSError):
        appender.append(str(tmp_path), b"a directory")


def test_error_lines() -> None:
    """Errors read as one line; tails keep the last lines; times are UTC ISO 8601."""
    assert one_line_error(ValueError("bad\n  model path")) == "ValueError: bad model path"
    assert one_line_error(KeyboardInterrupt()) == "KeyboardInterrupt"
    assert traceback_tail("1\n2\n3\n4\n5\n6\n7\n8\n") == "3\n4\n5\n6\n7\n8"
    assert utc_timestamp(0.25) == "1970-01-01T00:00:00.250Z"


def test_entry_script_outside_a_worker() -> None:
    """Outside a worker EntryScript is a singleton with Azure-like defaults."""
    script = EntryScript()
    assert script is EntryScript() is prsd.EntryScript()
    assert azureml_user.parallel_run.EntryScript is EntryScript
    assert script.agent_name == "process000"
    assert isinstance(script.logger, logging.Logger)
    assert os.path.isdir(script.output_dir) and os.path.isdir(script.working_dir)
    assert script.config == {}


def test_entry_script_logging_level_argument() -> None:
    """EntryScript(logging_level=...) sets its logger's level, as Azure's does."""
    logger = EntryScript().logger
    before = logger.level
    try:
        assert EntryScript(logging_level="DEBUG").logger.level == logging.DEBUG
        assert EntryScript(logging_level=logging.WARNING).logger.level == logging.WARNING
    finally:
        logger.setLevel(before)


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no")


def test_unprintable_exception_still_gives_one_line() -> None:
    """An exception whose str() raises still yields a one-line error."""
    assert one_line_error(_Unprintable()) == "_Unprintable: <exception str() failed>"


def test_timestamps_made_from_one_second_text_are_exact_across_seconds() -> None:
    """The whole second's text is kept between calls: every time still reads exactly as
    ``strftime`` makes it, forward across seconds and back (a clock stepped back)."""
    times = [1_780_000_000.0, 1_780_000_000.999, 1_780_000_001.0, 1_780_000_001.5, 0.25]
    times += [1_780_000_000.5, 1_780_003_599.999, 1_780_003_600.001, 59.9995]
    for t in times:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))
        assert utc_timestamp(t) == f"{text}.{int((t % 1) * 1000):03d}Z", t
    before = time.time()
    now = utc_timestamp()
    assert (
        before // 1 <= calendar.timegm(time.strptime(now[:19], "%Y-%m-%dT%H:%M:%S")) <= time.time()
    )
