"""job_error.txt's text: the cause, the first error and its file, the errors counted."""

from __future__ import annotations

from prsd.leader.end.errortext import NO_ERRORS, compact_error, init_groups, job_error_text
from prsd.leader.run.errorbook import ErrorBook
from prsd.leader.run.initrule import NodeInit
from prsd.spool.initrecords import InitError
from prsd.wire.records import Outcome


def _book(*errors: str) -> ErrorBook:
    book = ErrorBook()
    for i, error in enumerate(errors):
        book.add(
            Outcome(
                index=i,
                status="failed",
                process_name="process000",
                error=error,
                traceback_tail="Traceback\n  ValueError: x",
                error_file="/logs/user/error/n1/process000.txt",
            ),
            1,
            "n1",
        )
    return book


def _init(failures: int = 3, **first: object) -> NodeInit:
    error: dict[str, object] = {
        "process_name": "process000",
        "error": "OSError: no model",
        "error_file": "/e.txt",
    }
    error.update(first)
    return NodeInit("n1", 1, 0, failures, True, InitError.decode(error))


def test_only_a_job_without_errors_says_no_errors() -> None:
    """No errors and a clean end: exactly ``No errors.``; retried errors are listed."""
    assert job_error_text("Completed", "", ErrorBook()) == NO_ERRORS + "\n"
    text = job_error_text("Completed", "", _book("ValueError: x"))
    assert NO_ERRORS not in text and "1 x [failed] ValueError: x" in text


def test_a_job_wide_cause_without_errors_names_the_leaders_log() -> None:
    """A timeout of the whole job: the cause, then the log holding it."""
    text = job_error_text("Failed", "No progress update", ErrorBook(), job_log="/l/master.txt")
    assert text == "No progress update\nFull text: /l/master.txt\n"


def test_run_errors_follow_the_cause_first_error_first() -> None:
    """The cause, the first error with its traceback tail and file, then the groups."""
    text = job_error_text(
        "Failed", "threshold", _book("KeyError: k", "ValueError: x", "ValueError: x")
    )
    lines = text.splitlines()
    assert lines[0] == "threshold"
    assert lines[1].startswith("First error: mini-batch 000000000 (attempt 1) on node n1")
    assert lines[2:4] == ["  Traceback", "    ValueError: x"]
    assert lines[4] == "Full text: /logs/user/error/n1/process000.txt"
    assert lines[6] == "Errors (2 distinct, 3 in all), most frequent first:"
    assert lines[7].startswith("2 x [failed] ValueError: x (first: mini-batch 000000001")


def test_init_failures_are_counted_per_node() -> None:
    """init() failures from the nodes' reports: the first one, its file, the count."""
    text = job_error_text("Failed", "init rule", ErrorBook(), inits=init_groups([_init()]))
    assert text.splitlines()[1:3] == [
        "First error: init failed (node n1, process000): OSError: no model",
        "Full text: /e.txt",
    ]
    assert "3 x [init] OSError: no model (first: process000 on node n1; see /e.txt)" in text


def test_a_leader_fault_points_at_its_traceback() -> None:
    """A fault file given: it is the cause's full text; errors are still counted."""
    text = job_error_text("Failed", "system error", _book("E: 1"), fault_file="/f.txt")
    assert text.splitlines()[:2] == ["system error", "Full text: /f.txt"]
    assert "First error" not in text and "1 x [failed] E: 1" in text


def test_a_node_without_init_failures_adds_no_group() -> None:
    """Reports from nodes whose workers started fine say nothing."""
    assert init_groups([NodeInit("n1", 2, 2, 0, False, None)]) == []


def test_control_characters_in_an_error_stay_on_one_line() -> None:
    """A message with a newline is written escaped, never as a forged line."""
    text = job_error_text("Failed", "bad\nFull text: /forged", ErrorBook())
    assert text.splitlines()[0] == "bad\\nFull text: /forged"


def test_a_traceback_becomes_one_readable_line() -> None:
    text = (
        "First error: mini-batch 000000000 (attempt 1) on node n1, process000: KeyError: 'x'\n"
        "  Traceback (most recent call last):\n"
        '    File "/spool/jobs/j/code/lib.py", line 9, in helper\n'
        "      return rows[key]\n"
        '    File "/spool/jobs/j/code/s.py", line 2, in run\n'
        "      raise KeyError('x')\n"
        "  KeyError: 'x'\n"
        "Full traceback: /spool/jobs/j/logs/user/error/n1/process000.txt"
    )
    assert compact_error(text) == (
        "First error: mini-batch 000000000 (attempt 1) on node n1, process000: KeyError: 'x' "
        "(at /spool/jobs/j/code/s.py:2 in run: raise KeyError('x')). "
        "Full traceback: /spool/jobs/j/logs/user/error/n1/process000.txt"
    )
    init_detail = (
        "  Traceback (most recent call last):\n"
        '    File "/c/s.py", line 2, in init\n'
        '      raise ValueError("model file missing")\n'
        "  ValueError: model file missing\n"
        "Full traceback: /l/e.txt"
    )
    assert compact_error(init_detail) == (
        'ValueError: model file missing (at /c/s.py:2 in init: raise ValueError("model file missing")).'
        " Full traceback: /l/e.txt"
    )
    assert compact_error("First error: init timed out (node n1)") == (
        "First error: init timed out (node n1)"
    )


def test_a_first_error_without_traceback_is_one_line_with_its_file() -> None:
    """A timeout or a wrong return type: no traceback, no escaped newline in the line."""
    text = (
        "First error: mini-batch 000000000 (attempt 1) on node n1, process000: run() did not "
        "return within 2 s (retry_settings.timeout); its stacks are in the worker's error file\n"
        "Full traceback: /l/e.txt"
    )
    assert compact_error(text) == (
        "First error: mini-batch 000000000 (attempt 1) on node n1, process000: run() did not "
        "return within 2 s (retry_settings.timeout); its stacks are in the worker's error "
        "file. Full traceback: /l/e.txt"
    )


def test_prsd_own_frames_are_not_where_the_error_was() -> None:
    """The innermost frame of the user's code is named; prsd's own (the worker host, the
    command runner, here or as another node's install names them) and importlib's never."""
    own = compact_error(
        "First error: attempt 1 of the command on node n1, process000: CommandFailed: boom\n"
        "  Traceback (most recent call last):\n"
        '    File "/opt/prsd/lib/python3.11/site-packages/prsd/worker/command.py", line 91, in _run_one\n'
        '      raise CommandFailed(f"the command exited with code {code}{said}")\n'
        "  prsd.worker.command.CommandFailed: boom\n"
        "Full traceback: /l/e.txt"
    )
    assert own == (
        "First error: attempt 1 of the command on node n1, process000: CommandFailed: boom. "
        "Full traceback: /l/e.txt"
    )
    import_tail = compact_error(
        '  File "/x/prsd/worker/host.py", line 158, in _start\n'
        "    module = import_entry_script(hello.code_dir, hello.entry_script)\n"
        "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File "/x/prsd/worker/script.py", line 104, in import_entry_script\n'
        "    raise EntryScriptError(\n"
        "prsd.worker.script.EntryScriptError: SyntaxError at import of the entry script: "
        "expected ':' (/c/score.py, line 1)\n"
        "Full traceback: /l/e.txt"
    )
    assert import_tail == (
        "SyntaxError at import of the entry script: expected ':' (/c/score.py, line 1). "
        "Full traceback: /l/e.txt"
    )
    user_below = compact_error(
        "  Traceback (most recent call last):\n"
        '    File "/x/prsd/worker/script.py", line 127, in _import\n'
        "      spec.loader.exec_module(module)\n"
        '    File "<frozen importlib._bootstrap_external>", line 940, in exec_module\n'
        '    File "/c/score.py", line 3, in <module>\n'
        "      import missing_module\n"
        "  ModuleNotFoundError: No module named 'missing_module'\n"
    )
    assert user_below == (
        "ModuleNotFoundError: No module named 'missing_module' "
        "(at /c/score.py:3 in <module>: import missing_module)"
    )


def test_an_init_tail_without_frames_is_named_by_its_exception_line() -> None:
    """The last lines of an init() traceback may hold no frame line: the exception line
    leads, not the source line above it."""
    tail = (
        '  raise FileNotFoundError("model.pkl is missing")\n'
        "  FileNotFoundError: model.pkl is missing\n"
        "Full traceback: /l/e.txt"
    )
    assert (
        compact_error(tail) == "FileNotFoundError: model.pkl is missing. Full traceback: /l/e.txt"
    )
