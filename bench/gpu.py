"""``python -m bench.gpu``: a GPU job's utilisation under prsd against the same model in a
tight loop on the same GPU, both read from NVML's utilisation percent.

The tight loop is one process calling ``entry/gpustep.py``'s step for ``seconds``, NVML
sampled every 0.5 s. prsd runs the same step per item (one item per mini-batch) with
``prsd run``, ``max_concurrency_per_instance`` set explicitly, and its utilisation is read
from the job's own monitor columns (``Gpu 0 Utilization Percent`` in
``logs/perf/<node>/node_resource_usage.csv``, every second). Where there is no GPU
(NVML says why) or no torch with CUDA, one line says so and nothing runs: it is a bench.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.execute import REPO
from bench.inputs import file_set
from bench.prsd_job import ENTRY_DIR, job_yaml, make_job_folder
from bench.script import load
from bench.stats import median

COLUMN = "Gpu 0 Utilization Percent"


def why_not() -> str:
    """ "" when a GPU and torch with CUDA are here, else why the GPU part is skipped."""
    from prsd.agent.nvml import probe_gpus

    report = probe_gpus()
    if not report.gpus:
        return f"no GPU ({report.unavailable or 'NVML reports none'})"
    try:
        import torch
    except ImportError:
        return "no torch in this interpreter (install one with CUDA to run the GPU part)"
    if not torch.cuda.is_available():
        return "torch cannot use CUDA here"
    return ""


def tight_loop(seconds: float) -> list[float]:
    """NVML's utilisation of GPU 0 while one process runs the step back to back."""
    import pynvml

    module = load(str(ENTRY_DIR / "gpustep.py"))
    module.init()
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    samples: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.5):
            samples.append(float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        module.step()
    stop.set()
    thread.join()
    pynvml.nvmlShutdown()
    return samples


def under_prsd(items: int, workers: int, work: Path) -> tuple[list[float], float]:
    """The monitor's utilisation samples of GPU 0 during a prsd job, and its wall time."""
    job = make_job_folder(
        work / "job",
        job_yaml(
            name="bench-gpu",
            input_path=str(file_set(items, 0)),
            input_format="files",
            mini_batch_size="1",
            workers=workers,
            script="gpustep.py",
        )
        + "resource_monitor_interval: 1\n",
    )
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "prsd.daemon", "run", str(job), "--spool", str(work / "spool")],
        check=True,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - started
    samples: list[float] = []
    for path in (work / "spool").glob("jobs/*/logs/perf/*/node_resource_usage.csv"):
        with open(path, newline="", encoding="utf-8") as f:
            samples += [float(r[COLUMN]) for r in csv.DictReader(f) if r.get(COLUMN)]
    return samples, wall


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.gpu", description=__doc__)
    p.add_argument("--seconds", type=float, default=30.0, help="the tight loop's length")
    p.add_argument("--items", type=int, default=300, help="items (mini-batches) of the prsd job")
    p.add_argument("--workers", type=int, default=1, help="max_concurrency_per_instance")
    p.add_argument("--out", type=Path, default=None, help="write the figures here as JSON")
    args = p.parse_args(argv)
    why = why_not()
    if why:
        print(f"GPU part skipped: {why}", flush=True)
        return 0
    with tempfile.TemporaryDirectory(prefix="prsd-bench-gpu-") as tmp:
        loop = tight_loop(args.seconds)
        prsd, wall = under_prsd(args.items, args.workers, Path(tmp))
    doc: dict[str, Any] = {
        "tight_loop_util_median": median(loop),
        "prsd_util_median": median(prsd),
        "prsd_wall_s": round(wall, 2),
        "samples": {"tight_loop": loop, "prsd": prsd},
        "workers": args.workers,
    }
    print(
        f"GPU utilisation (NVML, median): tight loop {doc['tight_loop_util_median']} %, "
        f"prsd {doc['prsd_util_median']} % ({args.workers} workers, {args.items} items, "
        f"{wall:.1f} s)",
        flush=True,
    )
    if args.out is not None:
        args.out.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
