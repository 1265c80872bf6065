"""Workers that die: segfault, os._exit, running out of memory under RLIMIT_AS.

Each bad mini-batch kills (or fails) its worker on every attempt: it is tried
1 + max_retries times on fresh workers, classified in processed_mini-batches.csv,
then fails alone while the job goes on and completes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

SCRIPT = """
    import ctypes, os, resource, signal, time
    MB = 1024 * 1024

    def _vms():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")

    def _fill_address_space():
        # Lower RLIMIT_AS to just above what the worker uses, then allocate until it
        # says no. The hard limit is left alone, so the soft one can be restored.
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (_vms() + 256 * MB, hard))
        blocks = []
        try:
            while True:
                blocks.append(bytearray(8 * MB))
        except MemoryError:
            return blocks, soft, hard

    def run(mini_batch):
        name = os.path.basename(mini_batch[0])
        if name == "item00001.txt":
            ctypes.string_at(0)  # SIGSEGV
        if name == "item00003.txt":
            os._exit(3)
        if name == "item00005.txt":
            blocks, soft, hard = _fill_address_space()
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
            raise MemoryError("could not allocate another 8 MiB")
        if name == "item00006.txt":
            blocks, soft, hard = _fill_address_space()
            time.sleep(1.5)  # long enough for the agent to sample it at its limit
            os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
        return [name]
"""

YAML = """
    input_data: ./data
    mini_batch_size: "1"
    resources: {max_concurrency_per_instance: 2}
    retry_settings: {max_retries: 1, timeout: 30}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""


def test_crashes_and_oom_are_classified_retried_and_quarantined(tmp_path: Path) -> None:
    """Segfault and os._exit are crashed, the RLIMIT_AS deaths oom; each fails alone."""
    job = make_job(tmp_path, SCRIPT, YAML, files=8)
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stderr + r.stdout
    out = (r.job / "outputs" / "out.txt").read_text().splitlines()
    assert out == ["item00000.txt", "item00002.txt", "item00004.txt", "item00007.txt"]
    rows: dict[str, list[dict[str, str]]] = {}
    for row in r.report():
        rows.setdefault(row["mini_batch_id"], []).append(row)

    def statuses(mb: int) -> list[str]:
        return [row["status"] for row in sorted(rows[f"{mb:09d}"], key=lambda x: x["attempt"])]

    assert statuses(1) == ["crashed", "crashed"]
    assert statuses(3) == ["crashed", "crashed"]
    assert statuses(5) == ["oom", "oom"]
    assert statuses(6) == ["oom", "oom"]
    assert statuses(0) == ["succeeded"]
    errors = {mb: {row["error"] for row in rows[mb]} for mb in rows}
    assert errors["000000001"] == {"the worker died: returncode -11 (SIGSEGV, not sent by prsd)"}
    assert errors["000000003"] == {"the worker died: returncode 3"}
    assert errors["000000005"] == {"MemoryError: could not allocate another 8 MiB"}
    killed = rows["000000006"][0]["error"]
    assert "(SIGKILL, not sent by prsd)" in killed and "of its RLIMIT_AS limit" in killed
    pids = {row["pid"] for mb in ("000000001", "000000003", "000000006") for row in rows[mb]}
    assert len(pids) == 6, "every attempt that killed its worker ran in a fresh worker"
    main = r.main_logs()
    assert len(re.findall(r"exits with returncode -11 \(SIGSEGV, not sent by prsd\)", main)) == 2
    assert len(re.findall(r"exits with returncode 3: died while running", main)) == 2
    assert len(re.findall(r"exits with returncode -9 \(SIGKILL, not sent by prsd\)", main)) == 2
    stderr = "".join(p.read_text() for p in (r.logs / "user" / "stderr" / "n1").iterdir())
    assert "Segmentation fault" in stderr, "PYTHONFAULTHANDLER shows where it crashed"
    assert "Processed 8 of 8 mini-batches" in r.result_text()
    assert "4 succeeded, 4 failed" in r.result_text()
    master = (r.logs / "sys" / "master_role.txt").read_text(encoding="utf-8")
    assert "mini-batch 000000001 quarantined: its attempts ended crashed 2 times" in master
