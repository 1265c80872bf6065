"""The pure containment rules (prsd/jobspec/confine.py): no file system, plain paths."""

from __future__ import annotations

from pathlib import PurePosixPath as P

import pytest

from prsd.jobspec.confine import (
    SYSTEM_FOLDERS,
    guard_of,
    guard_problem,
    is_confined,
    roots_problem,
    spool_problem,
)

SPOOL = P("/srv/spool")
JOB = SPOOL / "jobs" / "j1"
GUARDED = (*SYSTEM_FOLDERS, P("/home/bob"))


@pytest.mark.parametrize(
    ("owner", "daemon", "confined"),
    [(1000, 0, True), (0, 0, False), (1000, 1000, False), (1000, 999, True)],
)
def test_confined_when_the_daemons_act_for_someone_else(
    owner: int, daemon: int, confined: bool
) -> None:
    """A job run by its own user is not confined; root running a user's job is."""
    assert is_confined(owner, daemon) is confined


@pytest.mark.parametrize(
    "name",
    [
        "spec.json",
        "owner.json",
        "state/final.json",
        "tasks/pending/000000/000000000.a1.e1",
        "logs/job_result.txt",
        "results/000000/x.res",
        "work/n1/process000/x",
        "code/score.py",
        "job.yaml",
        "origin.json",
        ".tmp-x",
        "nodes/n1.json",
        "retry.json",
        "retry_kept.jsonl",  # a retry job's kept results and output order: the daemons'
        "retry_order.json",
    ],
)
def test_outputs_never_name_the_daemons_files(name: str) -> None:
    """Every name the daemons keep in a job's folder is refused as an output, with the name."""
    found = spool_problem(JOB / name, SPOOL, JOB, output=True)
    assert found is not None and name.split("/")[0] in found


@pytest.mark.parametrize(
    "name", ["outputs/out.txt", "outputs/a/b.csv", "results.txt", "mine/out.txt"]
)
def test_outputs_in_the_job_folder_pass(name: str) -> None:
    """./outputs/... and fresh names under the job's folder are the job's own."""
    assert spool_problem(JOB / name, SPOOL, JOB, output=True) is None


@pytest.mark.parametrize(
    "path",
    [
        SPOOL / "leader" / "epoch-9",
        SPOOL / "nodes" / "n1.json",
        SPOOL / "active" / "j1",
        SPOOL / "inbox" / "x",
        SPOOL / "jobs" / "j2" / "outputs" / "out.txt",
        SPOOL / "jobs",
        SPOOL,
    ],
)
def test_the_spool_outside_the_job_is_refused(path: P) -> None:
    """Control folders and other jobs are never an output, nor an input of a confined job."""
    for output in (True, False):
        found = spool_problem(path, SPOOL, JOB, output=output)
        assert found is not None and "outside this job's folder" in found


def test_the_job_folder_itself_is_no_output() -> None:
    """The job's folder is no file to write."""
    assert spool_problem(JOB, SPOOL, JOB, output=True) == "is the job's folder itself"


def test_paths_outside_the_spool_are_not_its_business() -> None:
    """spool_problem says nothing of paths elsewhere (the roots decide those)."""
    assert spool_problem(P("/data/out.txt"), SPOOL, JOB, output=True) is None
    assert spool_problem(JOB / "spec.json", SPOOL, JOB, output=False) is None


@pytest.mark.parametrize(
    ("path", "guard"),
    [
        ("/", "/"),
        ("/etc", "/etc"),
        ("/etc/shadow", "/etc"),
        ("/root/x", "/root"),
        ("/proc/1/environ", "/proc"),
        ("/sys/kernel", "/sys"),
        ("/dev/sda", "/dev"),
        ("/boot/vmlinuz", "/boot"),
        ("/home/bob/data", "/home/bob"),
    ],
)
def test_guarded_folders(path: str, guard: str) -> None:
    """System folders and other users' homes are guarded; / guards only itself."""
    assert guard_of(P(path), GUARDED) == P(guard)


@pytest.mark.parametrize("path", ["/data/x", "/home/alice/x", "/tmp/x", "/etcetera", "/rooted"])
def test_unguarded_folders(path: str) -> None:
    """Ordinary data folders, the owner's own home and look-alike names are not guarded."""
    assert guard_of(P(path), GUARDED) is None


@pytest.mark.parametrize(
    ("path", "roots", "allowed"),
    [
        ("/etc", ("/",), False),
        ("/etc/app/x", ("/etc/app",), True),
        ("/etc/x", ("/etc",), True),
        ("/", ("/",), True),
        ("/root/x", ("/",), False),
        ("/home/bob/x", ("/home",), False),
        ("/home/bob/x", ("/home/bob",), True),
        ("/etc/x", ("/etc/app",), False),
    ],
)
def test_a_guarded_folder_must_be_named(path: str, roots: tuple[str, ...], allowed: bool) -> None:
    """An allowed root opens a guarded folder only when it lies at or inside it."""
    found = guard_problem(P(path), GUARDED, [P(r) for r in roots])
    assert (found is None) is allowed
    if not allowed:
        assert found is not None and "PRSD_ALLOWED_ROOTS" in found


def test_no_roots_confined_job_stays_in_its_folders() -> None:
    """Secure default: a confined job without roots uses only its own folders, and is told how to allow more."""
    mine = (JOB, P("/home/alice/job"))
    assert roots_problem(JOB / "outputs" / "x", (), mine, confined=True) is None
    assert roots_problem(P("/home/alice/job/data"), (), mine, confined=True) is None
    found = roots_problem(P("/data/x"), (), mine, confined=True)
    assert found is not None and "PRSD_ALLOWED_ROOTS" in found and "/etc/prsd/prsd.env" in found


def test_no_roots_unconfined_job_goes_anywhere() -> None:
    """A job the daemons' user runs for itself keeps working as before."""
    assert roots_problem(P("/data/x"), (), (JOB,), confined=False) is None


def test_configured_roots_bound_everyone() -> None:
    """With roots configured, a path must be under one (or in the job's own folders)."""
    roots = (P("/data"),)
    for confined in (True, False):
        assert roots_problem(P("/data/x"), roots, (JOB,), confined=confined) is None
        assert roots_problem(JOB / "x", roots, (JOB,), confined=confined) is None
        found = roots_problem(P("/scratch/x"), roots, (JOB,), confined=confined)
        assert found == "is outside the allowed roots (/data)"
