"""The hostile corpus against real daemons: each job is refused clearly, a good job still runs.

One ``prsd leader`` and one ``prsd agent`` serve a spool; the corpus (tests/hostile/)
and one good job are dropped into the inbox together. Every hostile job must end
Failed with the expected reason in ``job_result.txt`` (or, for links inside an input
folder, run without ever reading the link's target), the good job must complete,
and both daemons must still be running at the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING

from prsd.spool.jobid import make_job_id
from tests.helpers import final_record, wait_until
from tests.hostile.corpus import CASES, good_folder

if TYPE_CHECKING:
    from pathlib import Path

PRSD = [sys.executable, "-m", "prsd.daemon"]


def _drop(spool: Path, name: str, build: object) -> str:
    """Drop a folder under a fresh id-shaped name (the leader keeps it as the id)."""
    job_id = make_job_id(name)
    staging = spool / "inbox" / f".{job_id}"
    build(staging)  # type: ignore[operator]  # a corpus builder
    staging.rename(spool / "inbox" / job_id)
    return job_id


def _final(spool: Path, job_id: str) -> dict[str, object] | None:
    try:
        data = json.loads(final_record(spool / "jobs" / job_id / "state"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def test_corpus_is_refused_while_a_good_job_runs(tmp_path: Path) -> None:
    """>= 30 hostile folders fail one by one with their reason; the daemons keep serving."""
    assert len(CASES) >= 30
    spool = tmp_path / "spool"
    (spool / "inbox").mkdir(parents=True)
    env = dict(os.environ, PRSD_GPU_COUNT="0", PRSD_ALLOWED_ROOTS=str(tmp_path))
    daemons: list[subprocess.Popen[bytes]] = []
    log_path = tmp_path / "daemons.log"
    try:
        with open(log_path, "wb") as log:
            for role in (["leader"], ["agent", "--node-id", "n1"]):
                command = [*PRSD, *role, "--spool", str(spool)]
                daemons.append(subprocess.Popen(command, env=env, stdout=log, stderr=log))
        ids = {case.name: _drop(spool, case.name, case.build) for case in CASES}
        ids["good"] = _drop(spool, "good", good_folder)
        wait_until(
            lambda: all(_final(spool, n) is not None for n in ids.values()),
            150,
            "every job to end",
        )
        assert all(d.poll() is None for d in daemons), log_path.read_text()
    finally:
        for d in daemons:
            d.terminate()
        for d in daemons:
            d.wait(timeout=60)
    good = spool / "jobs" / ids["good"]
    assert (good / "logs" / "job_result.txt").read_text().startswith("Completed")
    assert len((good / "outputs" / "out.txt").read_text().splitlines()) == 4
    wrong = []
    for case in CASES:
        job = spool / "jobs" / ids[case.name]
        result = (job / "logs" / "job_result.txt").read_text(encoding="utf-8")
        if case.skipped:
            rows = (job / "outputs" / "out.txt").read_text().splitlines()
            logs = "".join(p.read_text(errors="replace") for p in job.rglob("*.txt") if p.is_file())
            ok = result.startswith("Completed") and len(rows) == 4 and case.expect in logs
        else:
            ok = (
                result.startswith("Failed")
                and case.expect in result
                and "\n" not in result.split("Reason: ")[1].split("\nThe job")[0]
            )
        if not ok:
            wrong.append(f"{case.name}: {result!r}")
    assert not wrong, "\n".join(wrong)
