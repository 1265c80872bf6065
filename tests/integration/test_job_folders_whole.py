"""A sealed job's own folders appear at their names with their final modes.

``make_job_folders`` made ``nodes/`` at its name with 0700 and opened it up after: a
``prsctl status`` the owner ran right after the submit read it in that moment and
failed (permission denied, seen once in a clean-clone run). Each folder is now made
under a name of its own, given its mode and owner, and renamed into place. The file
system's own calls are watched through Python's audit hook (real folders, real
calls): no folder is made at its final name, each arrives by a rename, and with the
mode it keeps.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

from prsd.spool.jobowner import JobOwner
from prsd.spool.jobroot import GATE_FOLDERS, GATE_MODE, OWNER_MODE, PUBLIC_FOLDERS, make_job_folders

_seen: list[tuple[str, tuple[Any, ...]]] = []
_watching: list[Path] = []


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if _watching and event in ("os.mkdir", "os.rename"):
        _seen.append((event, args))


sys.addaudithook(_hook)  # stays for the process; records only while a test watches


def test_each_job_folder_arrives_by_a_rename_with_its_final_mode(tmp_path: Path) -> None:
    root = tmp_path / "job"
    root.mkdir()
    owner = JobOwner(os.getuid(), os.getgid(), "me")
    _watching.append(root)
    try:
        make_job_folders(root, owner)
    finally:
        _watching.clear()
    names = [*PUBLIC_FOLDERS, *GATE_FOLDERS, "outputs"]
    made = [Path(os.fsdecode(args[0])) for event, args in _seen if event == "os.mkdir"]
    renamed = [Path(os.fsdecode(args[1])) for event, args in _seen if event == "os.rename"]
    assert not [p for p in made if p.parent == root and p.name in names], made
    assert sorted(p.name for p in renamed if p.parent == root) == sorted(names)
    modes = {name: stat.S_IMODE((root / name).stat().st_mode) for name in names}
    assert modes == {
        **dict.fromkeys(PUBLIC_FOLDERS, 0o755),
        **dict.fromkeys(GATE_FOLDERS, GATE_MODE),
        "outputs": OWNER_MODE,
    }
    assert sorted(p.name for p in root.iterdir()) == sorted(names)  # nothing left aside


def test_a_folder_already_there_is_kept_and_given_its_mode(tmp_path: Path) -> None:
    root = tmp_path / "job"
    (root / "state").mkdir(parents=True)
    (root / "state" / "keep.txt").write_text("x", encoding="utf-8")
    os.chmod(root / "state", 0o700)
    make_job_folders(root, JobOwner(os.getuid(), os.getgid(), "me"))
    assert (root / "state" / "keep.txt").read_text(encoding="utf-8") == "x"
    assert stat.S_IMODE((root / "state").stat().st_mode) == 0o755
    assert not [p for p in root.iterdir() if p.name.startswith(".")]
