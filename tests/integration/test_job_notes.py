"""What a migrated job does differently from Azure is said once, where the user looks.

``prsd run`` and ``prsctl submit`` print it on stderr before the job starts (``--quiet``
silences only that), ``prsctl status JOB`` shows it (and ``--json`` lists it), and
``logs/sys/job_notes.txt`` keeps it. A typo of a known key stays an error.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

SCRIPT = "def run(mini_batch):\n    return mini_batch\n"

IMAGE = "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04"

AZURE = f"""
    $schema: https://azuremlschemas.azureedge.net/latest/parallelJob.schema.json
    type: parallel
    experiment_name: iris
    compute: azureml:gpu-cluster
    input_data: ${{{{inputs.data}}}}
    inputs:
      data: {{type: uri_folder, path: ./data, mode: ro_mount}}
    outputs:
      scored: {{type: uri_folder, path: azureml://datastores/workspaceblobstore/paths/out/}}
    mini_batch_size: "1"
    task:
      code: ./code
      entry_script: score.py
      environment: {{image: {IMAGE}, name: iris-env}}
      program_arguments: --copy_logs_to_parent True --resource_monitor_interva 20
      append_row_to: ${{{{outputs.scored}}}}
"""


def _ctl(spool: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "prsd.cli.prsctl", *args, "--spool", str(spool)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _expected(job_root: Path) -> list[str]:
    return [
        "not used: $schema",
        "not used: experiment_name",
        "not used: compute",
        "not used: inputs.data.mode",
        "not used: task.environment.name",
        "passed on: task.program_arguments --copy_logs_to_parent",
        (
            "redirected: output scored: its path 'azureml://datastores/workspaceblobstore/"
            f"paths/out/' is not a local path; written to {job_root / 'outputs' / 'scored'}"
        ),
        (
            "did you mean: task.program_arguments: --resource_monitor_interva is passed to the "
            "script but is not a system argument; did you mean --resource_monitor_interval?"
        ),
    ]


def _said(stderr: str, prog: str) -> list[str]:
    head = f"{prog}: note: "
    return [ln.removeprefix(head) for ln in stderr.splitlines() if ln.startswith(head)]


def test_prsd_run_says_each_difference_once_in_three_places(tmp_path: Path) -> None:
    """stderr before the job's lines, prsctl status (text and JSON), logs/sys/job_notes.txt."""
    r = run_prsd(make_job(tmp_path, SCRIPT, AZURE, files=2), tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stderr
    said = _said(r.stderr, "prsd")
    expected = _expected(r.job)
    assert said[: len(expected)] == expected, said
    (image,) = said[len(expected) :]
    assert image.startswith(f"environment: task.environment.image '{IMAGE}' is not used: ")
    assert image.endswith("the workers run on the agent's Python"), image
    assert r.output("scored/parallel_run_step.txt").is_file()

    notes_file = (r.logs / "sys" / "job_notes.txt").read_text(encoding="utf-8")
    assert notes_file.startswith("not used - keys accepted and not used"), notes_file
    for line in said:
        assert f"  {line.split(': ', 1)[1]}\n" in notes_file, line
    assert "sys/job_notes.txt" in (r.logs / "readme.txt").read_text(encoding="utf-8")

    shown = _ctl(r.spool, "status", r.job_id).stdout
    at = shown.splitlines().index("notes")
    assert [ln.strip() for ln in shown.splitlines()[at + 1 :]][: len(said)] == said, shown
    doc = json.loads(_ctl(r.spool, "status", r.job_id, "--json").stdout)
    assert [f"{n['group']}: {n['text']}" for n in doc["notes"]] == said


def test_quiet_silences_the_printing_only(tmp_path: Path) -> None:
    """--quiet: no note on stderr; status and job_notes.txt still have them."""
    job = make_job(tmp_path, SCRIPT, AZURE, files=1)
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1", "--quiet")
    assert r.returncode == 0, r.stderr
    assert "note:" not in r.stderr, r.stderr
    assert "not used: compute" in _ctl(r.spool, "status", r.job_id).stdout
    assert "  compute\n" in (r.logs / "sys" / "job_notes.txt").read_text(encoding="utf-8")


def test_prsctl_submit_says_them_before_the_job_starts(tmp_path: Path) -> None:
    """prsctl submit: the id on stdout, the notes on stderr, naming the job's spool folder."""
    job = make_job(tmp_path, SCRIPT, AZURE, files=1)
    spool = tmp_path / "spool"
    sub = _ctl(spool, "submit", str(job))
    assert sub.returncode == 0, sub.stderr
    job_id = sub.stdout.strip()
    said = _said(sub.stderr, "prsctl")
    assert said[:8] == _expected(spool / "jobs" / job_id), said
    quiet = _ctl(spool, "submit", str(job), "--quiet")
    assert quiet.returncode == 0 and "note:" not in quiet.stderr, quiet.stderr


def test_a_typo_of_a_known_key_stays_an_error(tmp_path: Path) -> None:
    """mini_batch_sise is not an Azure-only key: refused, naming the key and where it is."""
    job = make_job(tmp_path, SCRIPT, AZURE.replace("mini_batch_size", "mini_batch_sise"), files=1)
    r = run_prsd(job, tmp_path / "spool")
    assert r.returncode == 2, r.stderr
    assert "mini_batch_sise" in r.stderr and "job.yaml:" in r.stderr, r.stderr
    assert "note:" not in r.stderr
