"""Outputs are written with the job owner's rights, never root's (issue 28, cases 1, 2, 6, 12).

Real root daemons, a real unprivileged owner (alice) and a second user (bob or
carol). The owner-side process makes, writes and renames every output as alice, and
opens the results a retry keeps as alice, so the kernel refuses what alice may not
do, however the path was swapped meanwhile. Every case runs beside a good job of
another user (bob, a second real user) that must end Completed with exactly its rows.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from tests.helpers import wait_until
from tests.hostile.fleet import PYTHONPATH, Fleet, fleet, job_yaml, snapshot
from tests.realusers import chown_tree, plain_user

if TYPE_CHECKING:
    import pwd

ROOTS = "{base}/data"
ROOTS_1 = "{base}/data:{base}/toetc:{base}/tobob"  # and the job folders alice submits
NO_RETRIES = "retry_settings: {max_retries: 0, timeout: 30}\n"
ROWS = [f"ok f{i}.txt" for i in range(4)]

FAILS_F3 = """
def init():
    pass

def run(mini_batch):
    name = mini_batch[0].rsplit("/", 1)[-1]
    if name == "f3.txt":
        raise ValueError("f3 fails the first time")
    return [f"ok {name}"]
"""

FAILS_ALL = """
def init():
    pass

def run(mini_batch):
    raise ValueError("every input fails the first time")
"""

SWAP_DURING_RETRY = """
import os
import time
from pathlib import Path

def init():
    pass

def run(mini_batch):
    name = mini_batch[0].rsplit("/", 1)[-1]
    if name != "f3.txt":  # the earlier ones: the retry's own merge opens the folder
        return [f"ok {{name}}"]
    time.sleep(3)  # their results are in the retry's own merge by now
    out = Path("{out}")
    try:
        os.rename(out, str(out) + ".moved")
        os.symlink("{target}", out)
        note = "swapped"
    except OSError as exc:
        note = f"refused: {{exc}}"
    Path("{note}").write_text(note)
    return [f"ok {{name}}"]
"""

REWRITE_KEPT = """
from pathlib import Path

def init():
    pass

def run(mini_batch):
    name = mini_batch[0].rsplit("/", 1)[-1]
    kept = Path.cwd().parents[2] / "retry_kept.jsonl"
    try:
        with open(kept, "w") as f:
            f.write('{line}' + "\\n")
        note = "rewritten"
    except OSError as exc:
        note = f"refused: {{exc}}"
    Path("{note}").write_text(note)
    return [f"ok {{name}}"]
"""


def _folder(path: Path, owner: object = None, mode: int = 0o755) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(mode)
    if owner is not None:
        chown_tree(path, owner)  # type: ignore[arg-type]
    return path


def _good_job(f: Fleet, bob: pwd.struct_passwd, marker: str = "") -> None:
    """bob's job, beside the attacks: it must end Completed with exactly its rows."""
    script = f'def run(mini_batch):\n    return [f"ok {{p.rsplit(chr(47), 1)[-1]}}{marker}" for p in mini_batch]\n'
    f.drop("good", job_yaml(f.python, name="good"), script, user=bob)


def _good_done(f: Fleet, bob: pwd.struct_passwd, marker: str = "") -> None:
    state, reason = f.final("good")
    assert state == "Completed", reason
    out = f.job("good") / "outputs" / "out.txt"
    assert out.read_text().splitlines() == [f"{row}{marker}" for row in ROWS]
    assert out.stat().st_uid == bob.pw_uid
    assert f.alive(), f.log.read_text(errors="replace")


def _first_job(
    f: Fleet, name: str, out: str = "./outputs/out.txt", roots: str = "", script: str = FAILS_F3
) -> str:
    """alice's job (``prsctl submit``) whose f3 fails (``FAILS_F3``): Completed with
    failures, three rows kept for a retry; or every input (``FAILS_ALL``)."""
    folder = f.owned_folder(
        name, job_yaml(f.python, name=name, append_row_to=out, extra=NO_RETRIES)
    )
    (folder / "code" / "score.py").write_text(script)
    done = f.prsctl_as_owner("submit", str(folder), roots=roots)
    assert done.returncode == 0, done.stdout + done.stderr
    job_id = done.stdout.split()[-1]
    state, reason = f.final_of(job_id)
    assert state in (("Completed with failures",) if script == FAILS_F3 else ("Failed",)), reason
    return job_id


def _output(f: Fleet, job_id: str) -> Path:
    """The job's append_row file, as its final state names it."""
    final = json.loads((f.spool / "jobs" / job_id / "state" / "final.json").read_text())
    return Path(final["output"])


def _retry(f: Fleet, job_id: str, code: Path, roots: str = "") -> str:
    done = f.prsctl_as_owner("retry", job_id, "--code", str(code), roots=roots)
    assert done.returncode == 0, done.stdout + done.stderr
    found = done.stdout.split()
    assert found, done.stdout + done.stderr
    return found[-1]


def _code(f: Fleet, name: str, script: str) -> Path:
    folder = _folder(f.base / name)
    (folder / "score.py").write_text(script)
    chown_tree(folder, f.user)
    return folder


def test_retry_of_an_owners_job_keeps_its_results_case_12() -> None:
    """A run-as-owner retry keeps its results (the kept pieces are read as the owner);
    ``--code`` of a folder the user cannot read names the permission."""
    with plain_user("prsdb") as bob, fleet("") as f:
        _good_job(f, bob)
        first = _first_job(f, "first")
        fixed = _code(
            f,
            "fixed",
            "def run(mini_batch):\n    return [f\"ok {p.rsplit('/', 1)[-1]}\" for p in mini_batch]\n",
        )
        retry = _retry(f, first, fixed)
        state, reason = f.final_of(retry)
        assert state == "Completed", reason
        out = _output(f, retry)
        assert out.read_text().splitlines() == ROWS
        assert (out.stat().st_uid, out.stat().st_gid) == (f.user.pw_uid, f.user.pw_gid)

        hidden = _folder(f.base / "hidden", mode=0o700)  # root's: alice may not read it
        (hidden / "score.py").write_text("def run(mini_batch):\n    return []\n")
        done = f.prsctl_as_owner("retry", first, "--code", str(hidden))
        assert done.returncode != 0
        said = done.stdout + done.stderr
        assert str(hidden) in said and "permission denied" in said.lower(), said
        assert "snapshot" not in said.lower(), said
        _good_done(f, bob)


def test_retry_output_swapped_for_a_link_during_run_case_1() -> None:
    """alice swaps her output folder for a link to root's folder (canary out.txt) or to
    bob's code folder (score.py) while the retry runs, after its first results were
    merged (so the combine at the end is what meets the link): nothing outside changes."""
    with plain_user("prsdb") as bob, fleet(ROOTS_1) as f:
        roots = ROOTS_1.format(base=f.base)
        data = _folder(f.base / "data")
        mine = _folder(data / "alice", f.user)
        etc = _folder(f.base / "etc")
        (etc / "out.txt").write_text("CANARY\n")
        (etc / "out.txt").chmod(0o600)
        bob_code = _folder(f.base / "bob" / "code")
        (bob_code / "score.py").write_text("print('bob')\n")
        chown_tree(f.base / "bob", bob)
        before = snapshot(etc, f.base / "bob")
        _good_job(f, bob)
        firsts = {
            "etc": _first_job(f, "toetc", f"{mine}/outa/out.txt", roots, FAILS_ALL),
            "bob": _first_job(f, "tobob", f"{mine}/outb/score.py", roots, FAILS_ALL),
        }
        targets = {"etc": (mine / "outa", etc), "bob": (mine / "outb", bob_code)}
        for out, _ in targets.values():
            _folder(out, f.user)
        retries = {}
        for key, (out, target) in targets.items():
            note = mine / f"attack-{key}.txt"
            script = SWAP_DURING_RETRY.format(out=out, target=target, note=note)
            retries[key] = _retry(f, firsts[key], _code(f, f"code-{key}", script), roots)
        for key, retry in retries.items():
            state, reason = f.final_of(retry)
            notes = (mine / f"attack-{key}.txt").read_text()
            assert notes == "swapped", notes  # the attack itself was possible
            assert state == "Failed", (key, reason)
            assert "is a symbolic link" in reason or "EACCES" in reason, (key, reason)
        assert snapshot(etc, f.base / "bob") == before
        assert (etc / "out.txt").stat().st_uid == 0
        _good_done(f, bob)


def test_output_into_folders_alice_may_not_write_case_2() -> None:
    """root's labels.txt in a root folder (directly, and through alice's own link), and a
    missing folder in carol's (root's, made for her): refused by the kernel, nothing
    changes."""
    with plain_user("prsdb") as bob, fleet(ROOTS) as f:
        data = _folder(f.base / "data")
        shared = _folder(data / "shared")
        (shared / "labels.txt").write_text("root's labels\n")
        mine = _folder(data / "alice", f.user)
        (mine / "link").symlink_to(shared)
        os.chown(mine / "link", f.user.pw_uid, f.user.pw_gid, follow_symlinks=False)
        carols = _folder(data / "carol")  # made for carol by the administrator: root's, 0755
        before = snapshot(shared, carols)
        _good_job(f, bob)
        cases = {
            "direct": f"{shared}/labels.txt",
            "link": f"{mine}/link/labels.txt",
            "carol": f"{carols}/private/out.txt",
        }
        for name, out in cases.items():
            f.drop(name, job_yaml(f.python, name=name, append_row_to=out))
        for name in cases:
            state, reason = f.final(name)
            assert state == "Failed", (name, reason)
            assert "EACCES" in reason or "symbolic link" in reason, (name, reason)
            assert "\n" not in reason and reason in f.result(name)
        assert snapshot(shared, carols) == before
        assert not (carols / "private").exists()
        _good_done(f, bob)


def test_kept_results_file_rewritten_after_the_split_case_6() -> None:
    """alice rewrites her retry's retry_kept.jsonl to name bob's private result: refused;
    her output holds her rows only, and bob's rows reach no file of hers."""
    marker = f"BOBSECRET-{secrets.token_hex(6)}"
    with plain_user("prsdb") as bob, fleet("") as f:
        _good_job(f, bob, marker)
        _good_done(f, bob, marker)
        good = f.job("good")
        result = next((good / "results").rglob("*.res"))
        line = json.dumps(
            {
                "job": good.name,
                "res": str(result.relative_to(good)),
                "off": 0,
                "len": 40,
                "hdr": "",
                "first": "x",
                "n": 1,
                "dig": "x",
                "t": 0,
            }
        )
        first = _first_job(f, "first")
        _folder(f.base / "notes", f.user)
        note = f.base / "notes" / "attack6.txt"
        retry = _retry(f, first, _code(f, "code6", REWRITE_KEPT.format(line=line, note=note)))
        state, reason = f.final_of(retry)
        assert note.read_text().startswith("refused"), note.read_text()
        assert state == "Completed", reason
        assert _output(f, retry).read_text().splitlines() == ROWS
        for path in (f.spool / "jobs" / retry).rglob("*"):
            if path.is_file() and not path.is_symlink():
                assert marker not in path.read_text(errors="replace"), path


SLOW = """
import time

def init():
    pass

def run(mini_batch):
    name = mini_batch[0].rsplit("/", 1)[-1]
    if name != "f0.txt":
        time.sleep(2)
    return [f"ok {name}"]
"""


def _helper_pids(uid: int) -> list[int]:
    """The owner-side processes running as ``uid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = (Path("/proc") / entry / "cmdline").read_bytes()
            owner = (Path("/proc") / entry).stat().st_uid
        except OSError:
            continue
        if b"prsd.asowner.server" in cmdline and owner == uid:
            found.append(int(entry))
    return found


def test_owner_side_killed_mid_job_fails_that_job_only() -> None:
    """``kill -9`` of a job's owner-side process: that job ends Failed naming it, nothing is
    published (a fresh owner side removes the temp file), the daemons go on and another
    job completes."""
    with plain_user("prsdb") as bob, fleet("") as f:
        f.drop("victim", job_yaml(f.python, name="victim"), SLOW)
        wait_until(lambda: bool(_helper_pids(f.user.pw_uid)), 60, "the owner side to start")
        for pid in _helper_pids(f.user.pw_uid):
            os.kill(pid, signal.SIGKILL)
        _good_job(f, bob)
        state, reason = f.final("victim")
        assert state == "Failed", reason
        assert "owner-side process" in reason and "SIGKILL" in reason, reason
        assert list((f.job("victim") / "outputs").iterdir()) == []  # the temp file too
        _good_done(f, bob)
        assert not _helper_pids(f.user.pw_uid)  # none left behind


FOLLOW = """
import sys
from pathlib import Path

import anyio

from prsd.embedded import follow_interruptible
from prsd.spool.layout import SpoolLayout

final = anyio.run(follow_interruptible, SpoolLayout(Path(sys.argv[1])), sys.argv[2])
print(f"{final.state}: {final.reason}")
"""


def _as_alice(f: Fleet, *command: str) -> str:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": PYTHONPATH}
    done = subprocess.run(
        ["runuser", "-u", f.user.pw_name, "--", "env",
         *(f"{k}={v}" for k, v in env.items()), f.python, *command],
        capture_output=True, text=True, check=False, cwd="/", timeout=180,
    )  # fmt: skip
    return done.stdout + done.stderr


def test_a_failed_prsd_run_prints_its_reason_to_its_owner() -> None:
    """``prsd run`` as alice while root daemons run the job: a Failed job prints its
    reason, and the wait it follows the job with returns the reason from the private
    final record (the public one has it blanked), as it prints when the job's
    ``job_result.txt`` cannot be read."""
    with fleet("") as f:
        folder = f.owned_folder("runfails", job_yaml(f.python, name="runfails", extra=NO_RETRIES))
        (folder / "code" / "score.py").write_text(FAILS_ALL)
        nodes, beat = f.spool / "nodes", f.spool / "leader" / "heartbeat.json"

        def served() -> bool:
            return beat.exists() and any(not p.name.startswith(".") for p in nodes.iterdir())

        wait_until(served, 60, "the daemons to serve the spool")  # else prsd run runs it itself
        said = _as_alice(f, "-m", "prsd.daemon", "run", str(folder), "--spool", str(f.spool))
        assert "serve the spool" in said, said
        job = next(p for p in (f.spool / "jobs").iterdir() if not p.name.startswith("."))
        public = json.loads((job / "state" / "final.json").read_text())
        private = json.loads((job / "state" / "final.private.json").read_text())
        assert public["state"] == "Failed" and public["reason"] == "", public
        assert private["reason"], private
        assert private["reason"] in said, said
        followed = _as_alice(f, "-c", FOLLOW, str(f.spool), job.name)
        assert followed.strip() == f"Failed: {private['reason']}", followed
