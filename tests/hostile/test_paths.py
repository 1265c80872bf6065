"""Nothing a job names leads the root daemons outside it (issues 19 and 23).

Real root daemons, a real unprivileged owner created for the test, job folders
dropped into the inbox as that owner's. Each hostile job ends Failed with a one-line
reason naming the key and the value, nothing outside it changes, and a healthy job
on the same spool completes meanwhile.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import textwrap
from pathlib import Path

from tests.hostile.fleet import PYTHONPATH, SCRIPT, Fleet, fleet, job_yaml, snapshot
from tests.realusers import chown_tree, plain_user, python_for, reachable_checkout

FORGED = "root:x:0:0:FORGED:/root:/bin/sh"

FAILING_SCRIPT = f"""
def init():
    pass
def run(mini_batch):
    raise ValueError("boom\\n{FORGED}\\n\\x1b[2J")
"""


def _good_rows(f: Fleet, name: str) -> None:
    state, reason = f.final(name)
    assert state == "Completed", (reason, f.log.read_text(errors="replace"))
    out = f.job(name) / "outputs" / "out.txt"
    assert out.read_text(encoding="utf-8").splitlines() == [f"ok f{i}.txt" for i in range(4)]
    assert out.stat().st_uid == f.user.pw_uid, "the merged output is the owner's file"


def _refused(f: Fleet, name: str, *words: str) -> None:
    state, reason = f.final(name)
    assert state == "Failed", (name, reason)
    for word in words:
        assert word in reason, (name, word, reason)
    assert "\n" not in reason
    assert reason in f.result(name)
    assert reason[:60] in f.status_line(name), f.status_line(name)


def test_outputs_never_reach_the_daemons_files() -> None:
    """append_row_to into spec.json, state/, a task file, leader/, another job or another
    user's folder: refused at intake.

    The allowed roots contain the whole spool: they do not open its control folders.
    """
    with fleet("{base}") as f:
        theirs = f.base / "theirs"  # another user's folder inside the allowed root
        theirs.mkdir()
        (theirs / "out.txt").write_text("their rows\n")
        os.chown(theirs, 4242, 4242)
        before = snapshot(theirs)
        f.drop("good", job_yaml(f.python, name="good"))
        good = f.job("good")
        cases = {
            "tospec": "./spec.json",
            "tofinal": "./state/final.json",
            "totask": "./tasks/pending/000000/000000000.a1.e1",
            "toleader": f"{f.spool}/leader/epoch-999999",
            "toother": f"{good}/outputs/out.txt",
            "tojobs": "../other/outputs/out.txt",
            "totheirs": f"{theirs}/out.txt",
        }
        for name, target in cases.items():
            f.drop(name, job_yaml(f.python, name=name, append_row_to=target))
        for name, target in cases.items():
            _refused(f, name, "append_row_to", target.rsplit("/", 1)[-1])
        _refused(f, "totheirs", "belongs to uid 4242")
        assert snapshot(theirs) == before
        _good_rows(f, "good")
        for name in cases:
            job = f.job(name)
            assert not (job / "spec.json").exists() or (job / "spec.json").read_bytes()[:1] == b"{"
            assert not list((job / "outputs").glob("*")) if (job / "outputs").exists() else True
        assert not (f.spool / "leader" / "epoch-999999").exists()
        assert not (f.spool / "jobs" / "other").exists()
        assert f.alive(), f.log.read_text(errors="replace")


def test_no_allowed_roots_keeps_a_users_job_in_its_folder() -> None:
    """Secure without configuration: /root, /etc and any folder outside the job are refused,
    with the setting that allows more; a newline in an error never forges a line."""
    with fleet("") as f:
        shared = f.base / "shared"
        shared.mkdir()
        (shared / "x.txt").write_text("x\n")
        before = snapshot(shared, f.base / "spool" / "leader")
        f.drop("good", job_yaml(f.python, name="good"))
        f.drop("rootin", job_yaml(f.python, name="rootin", input_data="/root"))
        f.drop("etcin", job_yaml(f.python, name="etcin", input_data="/etc"))
        f.drop("outside", job_yaml(f.python, name="outside", input_data=str(shared)))
        f.drop("abs_out", job_yaml(f.python, name="abs_out", append_row_to=f"{shared}/out.txt"))
        extra = "mini_batch_error_threshold: 0\nretry_settings: {max_retries: 0}\n"
        f.drop("newline", job_yaml(f.python, name="newline", extra=extra), FAILING_SCRIPT)
        _refused(f, "rootin", "input_data", "/root", "PRSD_ALLOWED_ROOTS")
        _refused(f, "etcin", "input_data", "/etc", "PRSD_ALLOWED_ROOTS")
        _refused(
            f, "outside", "input_data", str(shared), "PRSD_ALLOWED_ROOTS", "/etc/prsd/prsd.env"
        )
        _refused(f, "abs_out", "append_row_to", f"{shared}/out.txt", "PRSD_ALLOWED_ROOTS")
        state, _ = f.final("newline")
        assert state == "Failed"
        _good_rows(f, "good")
        _submit_applies_the_leaders_rule(f)
        assert snapshot(shared) == {k: v for k, v in before.items() if k.startswith(str(shared))}
        _no_forged_line(f, "newline")
        assert f.alive(), f.log.read_text(errors="replace")


def _no_forged_line(f: Fleet, name: str) -> None:
    """No file the daemons (root) wrote for the job holds a line the job's error forged."""
    job = f.job(name)
    checked = 0
    for path in job.rglob("*"):
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode) or info.st_uid != 0:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        checked += FORGED in text
        forged = [line for line in text.splitlines() if line.startswith(FORGED) or "\x1b" in line]
        assert not forged, (path, textwrap.shorten(text, 400))
    assert checked, "the error text reached no file the daemons wrote"


def _submit_applies_the_leaders_rule(f: Fleet) -> None:
    """prsctl submit, run by the owner, refuses /etc as the leader does, and submits a job
    whose inputs lie in the owner's own folder (which the leader then runs)."""
    bad = f.owned_folder("subetc", job_yaml(f.python, name="subetc", input_data="/etc"))
    refused = f.submit_as_owner(bad)
    assert refused.returncode != 0, refused
    assert "/etc" in refused.stderr and "PRSD_ALLOWED_ROOTS" in refused.stderr, refused.stderr
    mine = f.owned_folder("submine", job_yaml(f.python, name="submine"))
    accepted = f.submit_as_owner(mine)
    assert accepted.returncode == 0, accepted.stderr
    _good_rows(f, "submine")


def test_a_users_own_prsd_run_is_not_confined() -> None:
    """prsd run by a user of their own job, no allowed roots: absolute inputs and outputs
    outside the job folder work as before (the user's own rights bound it)."""
    with plain_user("prsdh") as user, reachable_checkout():
        base = Path(tempfile.mkdtemp(prefix="prsd-own-"))
        try:
            base.chmod(0o755)
            python = python_for(user)
            data, out = base / "data", base / "out"
            data.mkdir()
            out.mkdir()
            for i in range(4):
                (data / f"f{i}.txt").write_text(f"{i}\n")
            job = base / "job"
            (job / "code").mkdir(parents=True)
            (job / "code" / "score.py").write_text(textwrap.dedent(SCRIPT))
            text = job_yaml(python, name="own", input_data=str(data), append_row_to=f"{out}/o.txt")
            (job / "job.yaml").write_text(text)
            chown_tree(base, user)
            env = [
                "env",
                "PATH=/usr/bin:/bin",
                f"PYTHONPATH={PYTHONPATH}",
                "PRSD_ALLOWED_ROOTS=",
                "PRSD_GPU_COUNT=0",
            ]
            command = [python, "-m", "prsd.daemon", "run", "--spool", str(base / "spool"), str(job)]
            done = subprocess.run(
                ["runuser", "-u", user.pw_name, "--", *env, *command],
                capture_output=True,
                text=True,
                check=False,
                cwd="/",
                timeout=170,
            )
            assert done.returncode == 0, done.stdout + done.stderr
            assert (out / "o.txt").read_text().splitlines() == [f"ok f{i}.txt" for i in range(4)]
        finally:
            shutil.rmtree(base, ignore_errors=True)
