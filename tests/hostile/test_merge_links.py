"""The end-of-job merge never follows a link the job's owner planted (issues 19.6 and 23.2).

Real root daemons and a real unprivileged owner. ``run()`` itself attacks, as the
owner: it replaces the job's ``outputs/`` with a symlink to a root-only folder, or
swaps a committed result file for a symlink to a root-only file. Where the spool lets
the owner do so, the job ends Failed with a reason naming the link; where it does not
(a job folder the daemons own), the attack is harmless and the job completes. Either
way nothing outside the job changes, the root-only file's bytes reach no output, and
a healthy job on the same spool completes.
"""

from __future__ import annotations

import os
import secrets

from tests.hostile.fleet import Fleet, fleet, job_yaml, snapshot

LINK_OUTPUTS = """
import os
from pathlib import Path

def init():
    pass

def run(mini_batch):
    name = mini_batch[0].rsplit("/", 1)[-1]
    if name == "f0.txt":
        out = Path.cwd().parents[2] / "outputs"
        try:
            os.rename(out, out.with_name("outputs.moved"))
            os.symlink("{target}", out)
            note = "swapped"
        except OSError as exc:
            note = f"refused: {{exc}}"
        Path("attack.txt").write_text(note)
    return [f"ok {{name}}"]
"""

SWAP_RESULT = """
import os
import time
from pathlib import Path

def init():
    pass

def _swap(job):
    found = sorted((job / "results").glob("*/000000001.*.res"))
    if not found:
        return "no result of mini-batch 1 yet"
    res = found[0]
    try:
        res.unlink()
        res.symlink_to("{secret}")
        return "swapped in place"
    except OSError as exc:
        first = str(exc)
    try:
        os.rename(job / "results", job / "results.old")
        fresh = job / "results" / res.parent.name
        fresh.mkdir(parents=True)
        (fresh / res.name).symlink_to("{secret}")
        return "swapped the folder"
    except OSError as exc:
        return f"refused: {{first}}; {{exc}}"

def run(mini_batch):
    name = mini_batch[0].rsplit("/", 1)[-1]
    if name == "f0.txt":
        time.sleep(6)
    if name == "f2.txt":
        time.sleep(2)
        Path("attack.txt").write_text(_swap(Path.cwd().parents[2]))
    return [f"ok {{name}}"]
"""


def _attack_notes(f: Fleet, name: str) -> str:
    return " | ".join(p.read_text() for p in f.job(name).rglob("attack.txt"))


def _completed_or_refused(f: Fleet, name: str, refusal: str) -> str:
    """The job either failed naming the link, or completed with exactly its own rows."""
    state, reason = f.final(name)
    notes = _attack_notes(f, name)
    if state == "Failed":
        assert refusal in reason, (reason, notes)
        assert "\n" not in reason and reason in f.result(name)
    else:
        assert state == "Completed", (state, reason, notes)
        out = f.job(name) / "outputs" / "out.txt"
        assert not out.is_symlink() and not out.parent.is_symlink(), notes
        assert out.read_text().splitlines() == [f"ok f{i}.txt" for i in range(4)]
    return state


def test_merge_never_follows_planted_links() -> None:
    """outputs/ replaced by a link, a result file swapped for a link: refused or harmless."""
    with fleet("") as f:
        locked = f.base / "rootonly"
        locked.mkdir(mode=0o700)
        marker = f"TOPSECRET-{secrets.token_hex(8)}"
        (locked / "secret.txt").write_text(marker + "\n")
        os.chmod(locked / "secret.txt", 0o600)
        before = snapshot(locked)
        f.drop("good", job_yaml(f.python, name="good"))
        f.drop("linkout", job_yaml(f.python, name="linkout"), LINK_OUTPUTS.format(target=locked))
        swap = SWAP_RESULT.format(secret=locked / "secret.txt")
        f.drop("swapres", job_yaml(f.python, name="swapres", concurrency="2"), swap)
        _completed_or_refused(f, "linkout", "outputs is a symbolic link")
        _completed_or_refused(f, "swapres", "is a symbolic link")
        state, reason = f.final("good")
        assert state == "Completed", reason
        assert snapshot(locked) == before
        for name in ("linkout", "swapres", "good"):
            for path in f.job(name).rglob("*"):
                if path.is_file() and not path.is_symlink():
                    assert marker not in path.read_text(errors="replace"), path
        assert f.alive(), f.log.read_text(errors="replace")
