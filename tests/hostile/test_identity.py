"""A job's identity is the leader's: two real users against real root daemons.

One root ``prsd leader`` and one root ``prsd agent`` serve every case of this module;
users A (the attacker) and B are created with useradd. Each case asserts that the
attack is refused with a reason, that nothing outside A's own job changed, and that
B's job completes untouched. Users act through :func:`tests.realusers.as_user`
(a forked child with the user's ids), so the kernel's own permission checks decide.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
from typing import TYPE_CHECKING

import pytest

from prsd import daemon
from prsd.read.jobs import job_ids
from prsd.spool.opening import open_spool
from tests.helpers import stop_daemons, wait_until
from tests.hostile.identity_site import Site, prsctl_as, reader, settled_tree, tree, warm_up
from tests.realusers import as_user, open_base, python_for, reachable_checkout, real_users

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    """Root leader and agent on a fresh spool; users A and B; stopped and removed after."""
    with real_users(2) as (a, b), open_base("prsd-identity-") as base, reachable_checkout():
        spool = base / "spool"
        open_spool(spool)
        (spool / "inbox").chmod(0o1777)  # docs/deploy.md: anyone submits, sticky
        s = Site(base, spool, a, b, python_for(a))
        warm_up(s)
        try:
            s.start(["leader"])
            s.start(["agent", "--node-id", "n1", "--slots", "2"])
            yield s
        finally:
            stop_daemons(s.procs)


def test_an_inbox_folder_named_after_another_users_job_gets_a_fresh_id(site: Site) -> None:
    """A's folder named after B's job id never re-opens B's job: it runs under a new id."""
    b_job = site.submit_as(site.b, "bee")
    assert site.wait_ended(b_job)["state"] == "Completed", site.log()
    before = settled_tree(site.jobs / b_job)
    site.drop_as(site.a, "ant", b_job, {})
    a_job = site.new_job_of(site.a)
    assert a_job != b_job
    assert site.wait_ended(a_job)["state"] == "Completed", site.log()
    assert not (site.spool / "inbox" / b_job).exists()
    assert tree(site.jobs / b_job) == before, "B's job was not touched"
    rows = (site.jobs / a_job / "outputs" / "out.txt").read_text().split()
    assert rows.count("ant") == 4 and "bee" not in rows
    assert "inbox folder given a fresh job id" in site.log()


def test_planted_reserved_entries_are_moved_aside_never_written_through(site: Site) -> None:
    """Links at state/ and logs/, a forged spec.json and owner.json: refused with the reason,
    the links' target untouched, nothing run; B's job completes meanwhile."""
    target = site.base / "root-only"
    target.mkdir(mode=0o700)
    (target / "keep.txt").write_text("root's\n", encoding="utf-8")
    before = tree(target)
    forged_owner = json.dumps({"uid": 0, "gid": 0, "user": "root"})
    plant = {
        "state": f"->{target}",
        "logs": f"->{target}",
        "spec.json": '{"python": "/bin/sh"}',
        "owner.json": forged_owner,
    }
    site.drop_as(site.a, "planter", "planter", plant)
    b_job = site.submit_as(site.b, "bee2")
    a_job = site.new_job_of(site.a)
    final = site.wait_ended(a_job)
    assert final["state"] == "Failed"
    result = (site.jobs / a_job / "logs" / "job_result.txt").read_text()
    for name in ("logs", "owner.json", "spec.json", "state"):
        assert name in result
    assert "names prsd reserves" in result and ".planted-" in result
    assert tree(target) == before, "nothing was written through the planted links"
    job = site.jobs / a_job
    for name in ("state", "logs"):  # the daemons' own, fresh folders
        info = os.lstat(job / name)
        assert stat.S_ISDIR(info.st_mode) and info.st_uid == 0, name
    owner = json.loads((job / "owner.json").read_bytes())
    assert (owner["uid"], owner["gid"]) == (site.a.uid, site.a.gid), "the recorded owner is A"
    assert (job / "spec.json").exists() is False, "the forged spec was never taken as the spec"
    assert not list((job / "work").iterdir()), "no worker ran"
    (aside,) = job.glob(".planted-*")
    assert os.path.islink(aside / "state") and os.readlink(aside / "logs") == str(target)
    assert site.wait_ended(b_job)["state"] == "Completed", site.log()
    _, out = prsctl_as(site.a, site, "status", "--json")
    rows = {d["job_id"]: d for d in json.loads(out)["jobs"]}
    assert rows[a_job]["state"] == "Failed" and "reserves" in rows[a_job]["reason"]


def test_the_owner_cannot_rename_replace_or_plant_in_the_job_root(site: Site) -> None:
    """After intake, A's own job root is the daemons': state/ cannot be renamed, spec.json
    and owner.json cannot be rewritten or replaced, no link can be planted."""
    a_job = site.submit_as(site.a, "ant3")
    job = site.jobs / a_job
    wait_until(lambda: (job / "spec.json").exists(), 60, "A's job taken in")
    attacks = {
        "rename state/": lambda: (job / "state").rename(job / "state.old"),
        "rewrite spec.json": lambda: (job / "spec.json").write_text("{}"),
        "replace owner.json": lambda: os.unlink(job / "owner.json"),
        "plant a link": lambda: os.symlink("/etc", job / "nodes2"),
        "write in state/": lambda: (job / "state" / "final.json").write_text("{}"),
        "rename logs/": lambda: (job / "logs").rename(job / "logs.old"),
    }
    for what, attack in attacks.items():
        code, out = as_user(site.a, attack)
        assert code == 1 and "PermissionError" in out, f"{what}: {out}"
    assert site.wait_ended(a_job)["state"] == "Completed", site.log()
    rows = (job / "outputs" / "out.txt").read_text().split()
    assert rows.count("ant3") == 4


def test_a_new_leader_after_kill_9_resumes_the_job_as_its_recorded_owner(site: Site) -> None:
    """The leader is killed mid-job; the next one resumes from the daemons' own spec.json
    and the job still runs as A (its result files are A's), B's job beside it completes."""
    a_job = site.submit_as(site.a, "failover", pause_s=1.0)
    b_job = site.submit_as(site.b, "beside", pause_s=1.0)
    job = site.jobs / a_job
    wait_until(lambda: (job / "spec.json").exists(), 60, "A's job taken in")
    leader = site.procs[0]
    leader.kill()
    leader.wait(timeout=30)
    site.procs[0] = site.start(["leader", "--lease-s", "2", "--heartbeat-s", "0.3"])
    site.procs.pop()  # start() appended it; it replaces the killed one
    assert site.wait_ended(a_job)["state"] == "Completed", site.log()
    assert site.wait_ended(b_job)["state"] == "Completed", site.log()
    assert "takes the job over" in (job / "logs" / "sys" / "master_role.txt").read_text()
    assert (job / "outputs" / "out.txt").read_text().split().count("failover") == 4
    owner = json.loads((job / "owner.json").read_bytes())
    assert owner["uid"] == site.a.uid
    results = list(job.glob("results/*/*.res"))
    assert results and all(os.lstat(r).st_uid == site.a.uid for r in results)


def test_another_user_sees_the_status_row_but_none_of_the_files(site: Site) -> None:
    """B's code, outputs, logs, results and spec are closed to A; A's prsctl status shows
    B's row; B reads all of it, and prsctl logs works for B."""
    b_job = site.submit_as(site.b, "private")
    assert site.wait_ended(b_job)["state"] == "Completed", site.log()
    job = site.jobs / b_job
    private = [
        job / "outputs" / "out.txt",
        job / "logs" / "job_result.txt",
        job / "code" / "score.py",
        job / "job.yaml",
        job / "spec.json",
        next((job / "results").glob("*/*.res")),
        next((job / "work" / "n1").iterdir()),
    ]
    for path in private:
        code, out = as_user(site.a, reader(path))
        assert code == 1 and "PermissionError" in out, f"A read {path}: {out}"
        code, out = as_user(site.b, reader(path))
        assert code == 0, f"B cannot read its own {path}: {out}"
    code, out = as_user(site.a, lambda: os.listdir(job))
    assert code == 1 and "PermissionError" in out
    code, out = prsctl_as(site.a, site, "status", "--json")
    rows = {d["job_id"]: d for d in json.loads(out)["jobs"]}
    assert code == 0 and rows[b_job]["state"] == "Completed"
    code, out = prsctl_as(site.b, site, "logs", b_job)
    assert code == 0 and "Completed" in out


def test_a_symlink_or_file_in_the_inbox_is_removed_with_a_reason(site: Site) -> None:
    """Never Queued forever: the leader removes the link (its target untouched) and the file."""
    inbox = site.spool / "inbox"
    target = site.jobs  # a link to the daemons' own folder
    before = sorted(os.listdir(target))
    code, out = as_user(site.a, lambda: os.symlink(target, inbox / "linked-job"))
    assert code == 0, out
    code, out = as_user(site.a, lambda: (inbox / "filed-job").write_text("job.yaml\n"))
    assert code == 0, out
    wait_until(
        lambda: (
            not os.path.lexists(inbox / "linked-job") and not os.path.lexists(inbox / "filed-job")
        ),
        30,
        "the leader removed both",
    )
    assert sorted(os.listdir(target)) == before
    wait_until(  # the reason is logged once the entry is gone
        lambda: "linked-job" in site.log() and "a symlink" in site.log(),
        30,
        "the leader's reason for the link, logged",
    )
    code, out = prsctl_as(site.b, site, "status", "--json")
    ids = {d["job_id"] for d in json.loads(out)["jobs"]}
    assert not {"linked-job", "filed-job"} & ids


def test_prsd_run_as_an_ordinary_user_works_as_before(site: Site) -> None:
    """Without root nothing changes owner: A's own `prsd run` on A's own spool completes,
    its job root stays A's and owner.json names A."""
    folder = site.job_folder(site.a, "solo")
    spool = folder.parent / "own-spool"

    def run() -> int:
        with contextlib.redirect_stdout(io.StringIO()):
            return daemon.main(["run", str(folder), "--spool", str(spool), "--node-id", "solo"])

    code, out = as_user(site.a, run)
    assert (code, out) == (0, "0"), out
    (job,) = [j for j in (spool / "jobs").iterdir() if not j.name.startswith(".")]
    assert os.lstat(job).st_uid == site.a.uid
    assert json.loads((job / "owner.json").read_bytes())["uid"] == site.a.uid
    assert (job / "outputs" / "out.txt").read_text().split().count("solo") == 4


def test_prsctl_lists_no_phantom_job_for_a_link_in_the_inbox(tmp_path: Path) -> None:
    """Without any daemon: a link or a file in inbox/ is no Queued job; a folder is."""
    spool = open_spool(tmp_path / "spool")
    (tmp_path / "elsewhere").mkdir()
    (spool.inbox / "linked").symlink_to(tmp_path / "elsewhere")
    (spool.inbox / "filed").write_text("x")
    (spool.inbox / "real").mkdir()
    assert job_ids(spool) == ["real"]
