"""docs/deploy.md's walk-through, run as written: every block marked "run in CI", on
this one machine with the node ids gpu-1 and gpu-2, every absolute path moved under a
temporary folder (``/mnt/``, ``/etc/prsd``, ``/var/log/``) and ``alice`` played by the
user running the tests. A change to prsd that breaks a documented command fails here."""

from __future__ import annotations

import getpass
import os
import re
import subprocess
import sys
from pathlib import Path

import psutil

from tests.helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "deploy.md"
MARK = "*(run in CI as written)*"
ABSOLUTE = re.compile(r"(?<![\w/.-])(/mnt/|/etc/prsd\b|/var/log/)")  # a path's start
BLOCK = re.compile(re.escape(MARK) + r"\n```sh\n(.*?)\n```", re.DOTALL)


def walkthrough_blocks(text: str) -> list[str]:
    """The shell blocks of the walk-through, in the document's order."""
    return BLOCK.findall(text)


def moved(block: str, base: Path) -> str:
    """The block with its absolute paths under ``base`` and alice as this user."""
    block = ABSOLUTE.sub(lambda m: f"{base}{m.group(0)}", block)
    return re.sub(r"\balice\b", getpass.getuser(), block)


def test_the_doc_marks_every_step_of_the_walkthrough() -> None:
    blocks = walkthrough_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) == 6, blocks
    assert DOC.read_text(encoding="utf-8").count(MARK) == len(blocks)  # none malformed


def _daemons(spool: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if any("prsd" in part for part in cmd[:3]) and str(spool) in cmd:
            found.append(proc)
    return found


def test_the_deploy_walkthrough_runs_as_written(tmp_path: Path) -> None:
    blocks = [moved(b, tmp_path) for b in walkthrough_blocks(DOC.read_text(encoding="utf-8"))]
    (tmp_path / "var" / "log").mkdir(parents=True)
    (tmp_path / "log").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRSD_")}
    env.update(
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}",
        PRSD_ENV_FILE=str(tmp_path / "etc" / "prsd" / "prsd.env"),  # where /etc/prsd/ went
        PRSD_GPU_COUNT="0",
    )
    preamble = 'sudo() { "$@"; }\n'  # the tests run as root
    spool = tmp_path / "mnt" / "prsd" / "spool"
    outputs: list[str] = []
    try:
        for i, block in enumerate(blocks):
            if i == 4:  # a person checks that both agents are up before the first job
                wait_until(
                    lambda: all(
                        (spool / "nodes" / f"{n}.json").exists() for n in ("gpu-1", "gpu-2")
                    ),
                    60,
                    "both agents' heartbeats",
                )
            r = subprocess.run(
                # -e as a careful reader would; no pipefail: `prsctl logs JOB | head`
                # exits 141 when head leaves first, as any shell tool does.
                ["bash", "-eu", "-c", preamble + block],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=240,
                check=False,
            )
            assert r.returncode == 0, f"block {i} failed:\n{block}\n{r.stdout}\n{r.stderr}"
            outputs.append(r.stdout)
    finally:
        daemons = _daemons(spool)
        for proc in daemons:
            proc.terminate()
        _, alive = psutil.wait_procs(daemons, timeout=60)
        for proc in alive:
            proc.kill()
    first_job, cleanup = outputs[4], outputs[5]
    nodes_line = first_job.splitlines()[1:3]
    assert sorted(line.split()[0] for line in nodes_line) == ["gpu-1", "gpu-2"], first_job
    match = re.search(r"\bcount-\d{8}-\d{6}-[0-9a-f]+", first_job)
    assert match is not None, first_job
    job_id = match.group(0)
    assert "\nCompleted\n" in first_job, first_job
    assert f"8 {tmp_path}/mnt/data/{getpass.getuser()}/out/counts.txt" in first_job, first_job
    assert cleanup.splitlines()[0].startswith("nothing to remove: "), cleanup
    assert cleanup.splitlines()[1].startswith(f"job {job_id} removed (Completed, ended "), cleanup
    assert not (spool / "jobs" / job_id).exists()
