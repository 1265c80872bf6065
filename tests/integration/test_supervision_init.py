"""The three init rules (docs/supervision.md) end to end, with the rules' constants shortened."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

YAML = """
    input_data: ./data
    mini_batch_size: "1"
    resources: {max_concurrency_per_instance: 2}
    retry_settings: {max_retries: 1, timeout: TIMEOUT}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""

RAISES = """
    import time
    def init():
        time.sleep(DELAY)
        raise FileNotFoundError("model.pkl is missing")
    def run(mini_batch):
        return mini_batch
"""

HANGS = """
    import time
    def hang_in_init():
        while True:
            time.sleep(0.05)
    def init():
        hang_in_init()
    def run(mini_batch):
        return mini_batch
"""


def _job(tmp_path: Path, script: str, timeout: float = 60, delay: float = 0) -> Path:
    return make_job(
        tmp_path,
        script.replace("DELAY", str(delay)),
        YAML.replace("TIMEOUT", str(timeout)),
        files=4,
    )


def test_node_gives_up_after_three_times_workers_init_failures(tmp_path: Path) -> None:
    """First rule: 3 x 2 init failures in a row, the node stops, the job fails quoting init."""
    r = run_prsd(_job(tmp_path, RAISES), tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 42, r.stderr + r.stdout
    text = r.result_text()
    # The other slot may have had a worker failing at the same moment: 6 or 7.
    failed = re.search(r"Reason: init\(\) failed (\d+) times and every node stopped", text)
    assert failed is not None and 6 <= int(failed.group(1)) <= 7, text
    first = re.search(
        r"FileNotFoundError: model.pkl is missing \((process00[01]) on node n1\)", text
    )
    assert first is not None, text
    assert 'raise FileNotFoundError("model.pkl is missing")' in text, "the traceback's tail"
    error_file = r.logs / "user" / "error" / "n1" / f"{first.group(1)}.txt"
    assert f"Full traceback: {error_file}" in text
    assert "Traceback" in error_file.read_text()
    main = r.main_logs()
    exits = re.findall(r"process00\d exits with returncode 72: init\(\) failed", main)
    assert len(exits) == int(failed.group(1))
    assert "6 init() failures in a row (limit 3 x 2)" in main
    assert "process007" not in main, "no worker started after the limit"
    assert not r.report(), "no mini-batch ran"


def test_init_failures_after_the_window_fail_the_job(tmp_path: Path) -> None:
    """Second rule: after the window, 2 x nodes x workers init failures and no success."""
    job = _job(tmp_path, RAISES, delay=1.0)
    env = {"PRSD_INIT_RULE_WINDOW_S": "1"}
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1", env=env)
    assert r.returncode == 42, r.stderr + r.stdout
    text = r.result_text()
    assert "(limit 2 x nodes x workers = 4) with no success" in text, text
    assert "FileNotFoundError: model.pkl is missing" in text
    assert "Full traceback: " in text


def test_init_that_hangs_is_stopped_with_its_stacks_and_fails_the_job(tmp_path: Path) -> None:
    """Third rule: every worker in init() past 3 x timeout + grace; stacks dumped first."""
    job = _job(tmp_path, HANGS, timeout=0.5)
    env = {"PRSD_INIT_GRACE_S": "1"}
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1", env=env)
    assert r.returncode == 42, r.stderr + r.stdout
    text = r.result_text()
    assert "every worker stayed in init() past its deadline (2 init timeouts, 2 workers)" in text
    assert "init() did not finish within 2.5 s (3 x retry_settings.timeout + 1 s)" in text
    for name in ("process000", "process001"):
        dump = (r.logs / "user" / "error" / "n1" / f"{name}.txt").read_text()
        assert "hang_in_init" in dump, "the stack dump shows where init() hung"
    said = (r.logs / "job_error.txt").read_text().splitlines()
    assert said[0].startswith("every worker stayed in init() past its deadline"), said
    assert said[1].startswith("First error: init timed out (node n1, process00"), said
    assert any(line.startswith("2 x [init timeout] init() did not finish") for line in said)
    main = r.main_logs()
    assert "process000 exits with returncode -15 (SIGTERM, sent by prsd): init() timed out" in main
