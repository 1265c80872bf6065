"""Output paths checked at load: never a file the daemons keep, with the key and the value named."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from prsd.errors import JobSpecError
from prsd.jobspec.load import load_job_spec

YAML = """\
type: parallel
input_data: ./data
mini_batch_size: "1"
task:
  code: ./code
  entry_script: score.py
  append_row_to: {target}
"""


def _job(spool: Path, target: str) -> Path:
    job = spool / "jobs" / "j1"
    (job / "code").mkdir(parents=True)
    (job / "code" / "score.py").write_text("def run(b):\n    return b\n")
    (job / "data").mkdir()
    (job / "data" / "a.txt").write_text("a\n")
    (job / "job.yaml").write_text(YAML.format(target=target))
    for d in ("state", "leader", "jobs/j2/outputs"):
        (spool / ("jobs/j1/" + d if d == "state" else d)).mkdir(parents=True, exist_ok=True)
    return job


@pytest.mark.parametrize(
    "target",
    [
        "./spec.json",
        "./state/final.json",
        "./tasks/pending/000000/000000000.a1.e1",
        "./logs/x.txt",
        "../j2/outputs/out.txt",
        "../../leader/epoch-99",
        "{spool}/jobs/j2/outputs/out.txt",
        "{spool}/leader/x",
        "{spool}/jobs/j1/owner.json",
    ],
)
def test_append_row_to_into_the_daemons_files_is_refused(tmp_path: Path, target: str) -> None:
    """Relative or absolute, inside allowed roots or not: the key and the value are named."""
    spool = tmp_path / "spool"
    text = target.format(spool=spool)
    job = _job(spool, text)
    with pytest.raises(JobSpecError) as info:
        load_job_spec(job, spool_job_dir=job, allowed_roots=(tmp_path,), owner_uid=os.geteuid())
    line = info.value.one_line()
    assert "append_row_to" in line, line
    assert "\n" not in line


def test_append_row_to_under_outputs_passes(tmp_path: Path) -> None:
    """./outputs/... under the job is the job's own."""
    job = _job(tmp_path / "spool", "./outputs/out.txt")
    spec = load_job_spec(job, spool_job_dir=job, allowed_roots=(tmp_path,), owner_uid=os.geteuid())
    assert spec.append_row_to == str(job / "outputs" / "out.txt")


def test_confined_job_without_roots_stays_in_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No roots configured, owner other than the daemons: an absolute path outside the job is refused."""
    monkeypatch.setenv("PRSD_ALLOWED_ROOTS", "")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    job = _job(tmp_path / "spool", f"{outside}/out.txt")
    with pytest.raises(JobSpecError, match="PRSD_ALLOWED_ROOTS .*/etc/prsd/prsd.env"):
        load_job_spec(job, spool_job_dir=job, owner_uid=os.geteuid() + 4242)
    # The same job run by its own user goes on as before.
    spec = load_job_spec(job, spool_job_dir=job, owner_uid=os.geteuid())
    assert spec.append_row_to == f"{outside}/out.txt"


@pytest.mark.parametrize(
    ("target", "root"), [("/etc", "/"), ("/root", "/"), ("/proc/self", "/"), ("/", "/srv")]
)
def test_confined_input_in_a_guarded_folder_needs_a_root_naming_it(
    tmp_path: Path, target: str, root: str
) -> None:
    """PRSD_ALLOWED_ROOTS=/ does not open /etc, /root or /proc to a user's job; / needs / itself."""
    job = _job(tmp_path / "spool", "./outputs/out.txt")
    text = (job / "job.yaml").read_text().replace("input_data: ./data", f"input_data: {target}")
    (job / "job.yaml").write_text(text)
    other = os.geteuid() + 4242
    with pytest.raises(JobSpecError, match="system folder or another user's home") as info:
        load_job_spec(job, spool_job_dir=job, allowed_roots=(Path(root),), owner_uid=other)
    assert "input_data" in info.value.one_line()
    if target == "/etc":
        spec = load_job_spec(job, spool_job_dir=job, allowed_roots=(Path("/etc"),), owner_uid=other)
        assert spec.input.paths == ("/etc",)


def test_confined_origin_must_be_the_owners(tmp_path: Path) -> None:
    """origin.json naming a folder of someone else is refused for a confined job."""
    job = _job(tmp_path / "spool", "./outputs/out.txt")
    origin = tmp_path / "theirs"
    origin.mkdir()
    (job / "origin.json").write_text(json.dumps({"job_dir": str(origin)}))
    with pytest.raises(JobSpecError, match="not to the job's owner"):
        load_job_spec(job, spool_job_dir=job, owner_uid=os.geteuid() + 4242)


def test_the_recorded_owner_decides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With owner.json written by the daemons, its owner (not the folder's) makes the job confined."""
    monkeypatch.setenv("PRSD_ALLOWED_ROOTS", "")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    job = _job(tmp_path / "spool", f"{outside}/out.txt")
    assert load_job_spec(job, spool_job_dir=job).append_row_to == f"{outside}/out.txt"
    record = {"uid": os.geteuid() + 4242, "gid": 0, "user": "someone"}
    (job / "owner.json").write_text(json.dumps(record))
    with pytest.raises(JobSpecError, match="outside the job folder"):
        load_job_spec(job, spool_job_dir=job)


def test_roots_from_the_settings_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without PRSD_ALLOWED_ROOTS in the environment, the settings file's line is used
    (prsctl submit in a user's shell applies the daemons' roots)."""
    from prsd.jobspec import paths

    settings = tmp_path / "prsd.env"
    settings.write_text('# comment\nPRSD_SPOOL=/srv/spool\nPRSD_ALLOWED_ROOTS="/data:/mnt/x"\n')
    monkeypatch.setenv("PRSD_ENV_FILE", str(settings))
    monkeypatch.delenv("PRSD_ALLOWED_ROOTS", raising=False)
    assert paths.configured_roots_text() == "/data:/mnt/x"
    monkeypatch.setenv("PRSD_ALLOWED_ROOTS", "")
    assert paths.configured_roots_text() == ""


def test_a_spool_in_a_guarded_folder_still_serves_its_jobs(tmp_path: Path) -> None:
    """The job's own folder is never refused as guarded (a spool kept in a home folder)."""
    from prsd.jobspec.paths import Roots

    job = tmp_path / "spool" / "jobs" / "j1"
    job.mkdir(parents=True)
    roots = Roots().for_job(owner_uid=4242, daemon_uid=0, spool=tmp_path / "spool", job_root=job)
    roots = dataclasses.replace(roots, guarded=(tmp_path,))
    assert roots.problem(job / "outputs" / "out.txt", output=True) is None
    assert roots.problem(tmp_path / "elsewhere") is not None
