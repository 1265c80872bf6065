"""The leader daemon on a local spool watches the commit folders of the jobs it drives,
and only while it drives them: read from the kernel's own list of the leader's inotify
watches (``/proc/<pid>/fdinfo``), with real daemons and a real job."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from tests.fleet import serving
from tests.helpers import wait_until
from tests.jobkit import make_job

if TYPE_CHECKING:
    from pathlib import Path

SCRIPT = """
import os, time

def run(mini_batch):
    time.sleep(float(os.environ["PER_MB_S"]))
    return [os.path.basename(p) for p in mini_batch]
"""

YAML = """
type: parallel
name: watched
input_data: ./data
mini_batch_size: "1"
resources: {max_concurrency_per_instance: 1}
output_action: append_row
environment_variables: {PER_MB_S: "0.5"}
task:
  code: ./code
  entry_script: score.py
"""

WATCH = re.compile(r"^inotify wd:\S+ ino:([0-9a-f]+) sdev:", re.MULTILINE)


def watched_inodes(pid: int) -> set[int]:
    """The inodes process ``pid`` watches through its inotify descriptors."""
    inodes: set[int] = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii") as f:
                text = f.read()
        except OSError:
            continue  # closed meanwhile
        inodes.update(int(ino, 16) for ino in WATCH.findall(text))
    return inodes


def test_the_leader_watches_a_driven_job_s_commit_folders_and_lets_go_at_its_end(
    tmp_path: Path,
) -> None:
    with serving(tmp_path) as fleet:
        leader = fleet.procs["leader"].pid
        job_id = fleet.submit(make_job(tmp_path, SCRIPT, YAML, files=6))
        tasks = fleet.spool / "jobs" / job_id / "tasks"
        folders = [tasks / "done", tasks / "returned", tasks / "void"]
        wait_until(lambda: all(f.is_dir() for f in folders), 60, "the job taken in")
        inodes = {f.stat().st_ino for f in folders}
        wait_until(
            lambda: inodes <= watched_inodes(leader),
            30,
            "the leader watching done/, returned/, void/",
        )
        wait_until(lambda: any((tasks / "done").iterdir()), 60, "a shard folder of done/")
        shard = next((tasks / "done").iterdir())
        assert shard.stat().st_ino in watched_inodes(leader), "the shard of done/ is not watched"
        assert (fleet.spool / "jobs").stat().st_ino not in watched_inodes(leader)
        wait_until(lambda: fleet.final(job_id) is not None, 120, "the job's end")
        assert fleet.final(job_id)["state"] == "Completed"  # type: ignore[index]
        wait_until(
            lambda: not (inodes | {shard.stat().st_ino}) & watched_inodes(leader),
            30,
            "the leader letting go of the ended job's folders",
        )
