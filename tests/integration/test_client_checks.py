"""``prsd run`` and ``prsctl submit`` refuse, before they print a job id, what the leader
would refuse at intake: they check the job with the leader's code and the leader's
settings (the settings file named by ``PRSD_ENV_FILE`` included), so no job id is printed
for a job the leader fails a few seconds later, and nothing is left in the spool."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from tests.jobkit import make_job, prsctl, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

SCRIPT = """
    def run(mini_batch):
        return list(mini_batch)
"""


def _yaml(output: str = "./outputs/out.txt") -> str:
    return f"""
        name: checked
        input_data: ./data
        mini_batch_size: "1"
        resources: {{max_concurrency_per_instance: 1}}
        task:
          code: ./code
          entry_script: score.py
          append_row_to: {output}
    """


def _roots_elsewhere(tmp_path: Path) -> dict[str, str]:
    """A settings file whose allowed roots leave out the job folder (systemd's quoting)."""
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    settings = tmp_path / "prsd.env"
    settings.write_text(f"# the data share only\nPRSD_ALLOWED_ROOTS='{allowed}'\n")
    env = {k: v for k, v in os.environ.items() if k != "PRSD_ALLOWED_ROOTS"}
    return {**env, "PRSD_ENV_FILE": str(settings)}


CASES = {
    "folder-outside-roots": (_yaml(), "is outside the allowed roots"),
    "output-on-a-daemons-name": (
        _yaml("./logs/out.txt"),
        "would write into logs, which the prsd daemons keep",
    ),
}


def _nothing_queued(spool: Path) -> None:
    left = [
        p.name for d in ("inbox", "jobs") if (spool / d).is_dir() for p in (spool / d).iterdir()
    ]
    assert left == [], f"the refused job left {left} in the spool"


@pytest.mark.parametrize("case", CASES)
def test_prsd_run_refuses_before_the_job_id(tmp_path: Path, case: str) -> None:
    """The leader's intake message, exit 2, no ``job <id>`` line, nothing queued."""
    yaml_text, message = CASES[case]
    job = make_job(tmp_path, SCRIPT, yaml_text, files=2)
    env = _roots_elsewhere(tmp_path) if case == "folder-outside-roots" else None
    spool = tmp_path / "spool"
    result = run_prsd(job, spool, env=env, timeout_s=60)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.job_id == "" and "job " not in result.stdout, result.stdout
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    _nothing_queued(spool)


@pytest.mark.parametrize("case", CASES)
def test_prsctl_submit_refuses_before_the_job_id(tmp_path: Path, case: str) -> None:
    """The same refusal from ``prsctl submit``: no id on stdout, nothing in the inbox."""
    yaml_text, message = CASES[case]
    job = make_job(tmp_path, SCRIPT, yaml_text, files=2)
    env = _roots_elsewhere(tmp_path) if case == "folder-outside-roots" else None
    spool = tmp_path / "spool"
    for folder in ("inbox", "jobs"):
        (spool / folder).mkdir(parents=True)
    result = prsctl(spool, "submit", str(job), env=env)
    assert result.returncode != 0 and result.stdout == "", (result.stdout, result.stderr)
    assert message in result.stderr, result.stderr
    _nothing_queued(spool)
