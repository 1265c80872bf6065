"""Intake looks at a job's input with its owner's ids, never root's (issue 28).

Real root daemons; alice (the fleet's owner) drops jobs straight into ``inbox/``
naming paths in bob's 0700 folder: one that exists, one that does not, and a folder
holding an MLTable file. Loading the spec runs as alice, so the kernel answers the
same "Permission denied" for all three: the reason does not tell whether bob's path
exists, and nothing bob's table names reaches alice's job (root never read it). Bob's
own good job completes with its exact rows meanwhile.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from tests.hostile.fleet import Fleet, fleet, job_yaml
from tests.realusers import plain_user

if TYPE_CHECKING:
    import pwd
    from pathlib import Path

SECRET_NAME = "BOB-SECRET-NAME-77"


def _bobs_private(f: Fleet, bob: pwd.struct_passwd) -> Path:
    """bob's 0700 folder under the allowed root: a table file and an MLTable folder."""
    private = f.base / "data" / "bob" / "private"
    tabled = private / "tabled"
    tabled.mkdir(parents=True)
    (f.base / "data").chmod(0o755)
    (private / "secret.csv").write_text("k,v\nBOB-SECRET-ROW,1\n")
    (tabled / f"{SECRET_NAME}.csv").write_text("k,v\nBOB-SECRET-ROW,2\n")
    (tabled / "MLTable").write_text(
        f"type: mltable\npaths:\n  - file: ./{SECRET_NAME}.csv\n"
        "transformations:\n  - read_delimited: {delimiter: ','}\n"
    )
    for path in (private.parent, private, tabled, *private.rglob("*")):
        os.chown(path, bob.pw_uid, bob.pw_gid)
        path.chmod(0o700 if path.is_dir() else 0o600)
    return private


def _after_key(reason: str, path: Path) -> str:
    """The reason from ``input_data`` on, with the path written as ``PATH``."""
    assert "input_data" in reason, reason
    return reason.split("input_data", 1)[1].replace(str(path), "PATH")


def test_another_users_paths_look_the_same_whether_they_exist_or_not() -> None:
    with plain_user("prsdb") as bob, fleet("{base}/data") as f:
        private = _bobs_private(f, bob)
        f.drop("bobgood", job_yaml(f.python, name="bobgood"), user=bob)
        named = {
            "there": private / "secret.csv",
            "missing": private / "nothing.csv",
            "table": private / "tabled",
        }
        for name, path in named.items():
            f.drop(name, job_yaml(f.python, name=name, input_data=str(path)))
        seen = set()
        for name, path in named.items():
            state, reason = f.final(name)
            assert state == "Failed", (name, reason, f.log.read_text(errors="replace"))
            assert "Permission denied" in reason, (name, reason)
            assert "does not exist" not in reason, (name, reason)
            seen.add(_after_key(reason, path))
            job = f.job(name)
            assert not (job / "spec.json").exists(), f"{name} was taken in as if it could run"
            for file in job.rglob("*"):
                if file.is_file() and not file.is_symlink():
                    data = file.read_bytes()
                    assert SECRET_NAME.encode() not in data, file
                    assert b"BOB-SECRET-ROW" not in data, file
        assert len(seen) == 1, seen  # one text: it does not tell what is there
        state, reason = f.final("bobgood")
        assert state == "Completed", (reason, f.log.read_text(errors="replace"))
        out = f.job("bobgood") / "outputs" / "out.txt"
        assert out.read_text().splitlines() == [f"ok f{i}.txt" for i in range(4)]
        assert out.stat().st_uid == bob.pw_uid
        assert f.alive(), f.log.read_text(errors="replace")


SCORES_INTO = """
import argparse
import os

def init():
    global OUT
    parser = argparse.ArgumentParser()
    parser.add_argument("--scored")
    OUT = parser.parse_known_args()[0].scored

def run(mini_batch):
    name = mini_batch[0].rsplit("/", 1)[-1]
    with open(os.path.join(OUT, name), "w") as f:
        f.write("scored\\n")
    return [f"ok {name}"]
"""

FOLDER_OUTPUT = """\
  program_arguments: --scored ${{{{outputs.scored}}}}
outputs:
  scored: {{type: uri_folder{path}}}
"""


def _four_files_and_a_read_only_folder(data: Path) -> None:
    for i in range(4):
        (data / f"f{i}.txt").write_text(f"{i}\n")
    ro = data.parent / "outputs" / "ro"
    ro.mkdir(parents=True)
    ro.chmod(0o555)  # alice's own folder, which she made read-only


def test_a_steps_folder_output_is_made_with_the_owners_ids() -> None:
    """A named folder output in the job's ``outputs/`` (a pipeline step's) is made at
    intake by alice's owner side: made, and hers, where she may make it (her script
    writes into it); refused by the kernel with the reason inside a folder of hers she
    made read-only, where root, which may write anywhere, would have made it."""
    with plain_user("prsdb") as bob, fleet("") as f:
        f.drop("bobgood", job_yaml(f.python, name="bobgood"), user=bob)
        made = job_yaml(f.python, name="made", extra=FOLDER_OUTPUT.format(path=""))
        f.drop("made", made, SCORES_INTO)
        ro = ", path: ./outputs/ro/scored"
        refused = job_yaml(f.python, name="refused", extra=FOLDER_OUTPUT.format(path=ro))
        f.drop("refused", refused, SCORES_INTO, data=_four_files_and_a_read_only_folder)
        state, reason = f.final("made")
        assert state == "Completed", (reason, f.log.read_text(errors="replace"))
        scored = f.job("made") / "outputs" / "scored"
        assert sorted(p.name for p in scored.iterdir()) == [f"f{i}.txt" for i in range(4)]
        assert scored.stat().st_uid == f.user.pw_uid
        state, reason = f.final("refused")
        assert state == "Failed", (reason, f.log.read_text(errors="replace"))
        assert "outputs/ro/scored" in reason and "EACCES" in reason, reason
        assert not (f.job("refused") / "outputs" / "ro" / "scored").exists()
        state, reason = f.final("bobgood")
        assert state == "Completed", (reason, f.log.read_text(errors="replace"))
        out = f.job("bobgood") / "outputs" / "out.txt"
        assert out.read_text().splitlines() == [f"ok f{i}.txt" for i in range(4)]
        assert f.alive(), f.log.read_text(errors="replace")
