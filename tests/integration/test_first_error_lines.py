"""What ``job_result.txt`` says first, for failures users meet on day one (real runs):
a timeout and a wrong return are one line with their file; a SyntaxError at import says
so, with file and line; a failure while prsd writes run()'s result says prsd was
writing; a pipeline's command step speaks of the command, never of prsd's own frames."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prsd.cmdline import default_node_id
from tests.jobkit import make_job, run_prsd
from tests.pipekit import run_pipeline, write_files

if TYPE_CHECKING:
    from pathlib import Path

YAML = """
    name: firsts
    input_data: ./data
    mini_batch_size: "1"
    retry_settings: {max_retries: 0, timeout: 2}
    task:
      code: ./code
      entry_script: score.py
"""


def _result(tmp_path: Path, script: str, yaml_text: str = YAML) -> list[str]:
    job = make_job(tmp_path, script, yaml_text, files=1)
    r = run_prsd(job, tmp_path / "spool")
    return (r.logs / "job_result.txt").read_text(encoding="utf-8").splitlines()


def _first(lines: list[str]) -> str:
    return next(line for line in lines if line.startswith("First error: "))


def test_a_timeout_is_one_line_with_its_file(tmp_path: Path) -> None:
    line = _first(_result(tmp_path, "import time\ndef run(mb):\n    time.sleep(30)\n"))
    assert "\\n" not in line, line
    assert (
        "run() did not return within 2 s (retry_settings.timeout); its stacks are in the "
        "worker's error file. Full traceback: "
    ) in line, line


def test_a_none_return_is_one_line_with_its_file(tmp_path: Path) -> None:
    line = _first(_result(tmp_path, "def run(mb):\n    return None\n"))
    assert "\\n" not in line, line
    assert "it must return a list, tuple or pandas.DataFrame. Full traceback: " in line, line


def test_a_syntax_error_at_import_says_so_with_file_and_line(tmp_path: Path) -> None:
    job = make_job(tmp_path, "def run(mb)\n    return mb\n", YAML, files=1)
    r = run_prsd(job, tmp_path / "spool")
    lines = r.result_text().splitlines()
    script = r.job / "code" / "score.py"
    assert lines[0] == "Failed"
    assert lines[1].startswith(
        f"Reason: SyntaxError at import of the entry script: expected ':' ({script}, line 1)"
    ), lines
    assert "init() failed" not in "\n".join(lines)
    assert "prsd/worker" not in "\n".join(lines)


def test_a_failed_write_of_the_result_says_prsd_was_writing(tmp_path: Path) -> None:
    script = "import pandas as pd\ndef run(mb):\n    return pd.DataFrame({'a': [1]})\n"
    job = make_job(tmp_path, script, YAML + "      append_row_to: ./out.txt\n", files=1)
    settings = '{"append_row": {"pandas.DataFrame.to_csv": {"sep": "ab"}}}'
    (job / "code" / "parallel_run_step.settings.json").write_text(settings)
    r = run_prsd(job, tmp_path / "spool")
    line = _first((r.logs / "job_result.txt").read_text(encoding="utf-8").splitlines())
    assert (
        "run() returned, but prsd could not write its result to the append_row output "
        "(DataFrame.to_csv): TypeError: "
    ) in line, line


def test_a_command_step_failure_speaks_of_the_command(tmp_path: Path) -> None:
    pipeline = """
        type: pipeline
        jobs:
          fail:
            type: command
            command: echo about to fail; echo the first error >&2; exit 3
            retry_settings: {max_retries: 0}
    """
    write_files(tmp_path / "p", {"pipeline.yml": pipeline})
    r = run_pipeline(tmp_path / "p" / "pipeline.yml", tmp_path / "spool")
    assert r.returncode == 42, r.stdout + r.stderr
    lines = (r.step_job("fail") / "logs" / "job_result.txt").read_text().splitlines()
    assert lines[1] == "Reason: the command failed on its last attempt"
    node = default_node_id()  # the node `prsd run` serves as: this machine's default id
    assert lines[2].startswith(
        f"First error: attempt 1 of the command on node {node}, process000: CommandFailed: the "
        "command exited with code 3; its last lines: about to fail | the first error. "
        "Full traceback: "
    ), lines
    assert "prsd/worker" not in r.result() and "mini-batch" not in r.result()
    assert r.result().splitlines()[1].startswith("step fail ended Failed: attempt 1 of the command")
