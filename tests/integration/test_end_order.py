"""``prsd run`` ends a job with its final record last, seen by a real file-system watch.

The job's run() waits on a gate file, so the watch is on the job's folders before the
end begins; then every rename into ``logs/``, ``logs/user/`` and ``state/`` and the
removal of ``active/<job>`` are read, in order, from the kernel (inotify).
"""

from __future__ import annotations

import json
import subprocess
from typing import TYPE_CHECKING

from prsd.spool.layout import SpoolLayout
from tests.fswatch import Watch
from tests.helpers import stop_daemons, wait_until
from tests.jobkit import PRSD, make_job

if TYPE_CHECKING:
    from pathlib import Path

GATED = """
    import os, time
    def run(mini_batch):
        while not os.path.exists({gate!r}):
            time.sleep(0.02)
        return [os.path.basename(p) for p in mini_batch]
"""

YAML = """
    type: parallel
    name: end-order
    input_data: ./data
    mini_batch_size: "2"
    resources: {max_concurrency_per_instance: 1}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""

BEFORE_FINAL = (
    "job_error.txt",
    "error.txt",
    "job_result.txt",
    "status.private.json",
    "status.json",
)


def test_the_driver_ends_a_job_with_the_final_record_last(tmp_path: Path) -> None:
    gate = tmp_path / "go"
    job = make_job(tmp_path, GATED.format(gate=str(gate)), YAML, files=4)
    spool = SpoolLayout(tmp_path / "spool")
    proc = subprocess.Popen(
        [*PRSD, "run", str(job), "--spool", str(spool.root), "--node-id", "n1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    watch = Watch()
    try:
        wait_until(lambda: any(spool.active.glob("*")), 60, "the job to be taken in")
        (job_id,) = [p.name for p in spool.active.iterdir()]
        layout = spool.job(job_id)
        wait_until(layout.log_tree.master_role.exists, 60, "the job's logs")
        (layout.logs / "user").mkdir(exist_ok=True)
        for folder in (layout.logs, layout.logs / "user", layout.state, spool.active):
            watch.add(folder)
        gate.write_bytes(b"")
        out, err = proc.communicate(timeout=120)
    finally:
        stop_daemons([proc])
    assert proc.returncode == 0, (out + err).decode()
    events = [
        ("-active" if kind == "deleted" and folder.name == "active" else name)
        for kind, folder, name in watch.read()
        if kind == "moved" or (kind == "deleted" and folder.name == "active")
    ]
    watch.close()
    assert events.count("final.json") == 1, events
    last = {name: max(i for i, e in enumerate(events) if e == name) for name in set(events)}
    for name in (*BEFORE_FINAL, "final.private.json"):
        assert last[name] < last["final.json"], f"{name} after final.json: {events}"
    assert last["-active"] > last["final.json"], events
    final = json.loads((layout.state / "final.private.json").read_bytes())
    status = json.loads(layout.status.read_bytes())
    assert final["state"] == status["state"] == "Completed"
    assert final["counts"]["succeeded_mbs"] == status["succeeded_mbs"] == 2
    assert status["output"] == final["output"] != ""
    assert layout.log_tree.job_result.read_text().startswith("Completed")
    assert sorted((layout.outputs / "out.txt").read_text().split()) == [
        f"item{i:05d}.txt" for i in range(4)
    ]
