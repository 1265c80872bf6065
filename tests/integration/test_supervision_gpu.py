"""GPU slots end to end: PRSD_GPU_COUNT, a fake NVML with a lost GPU, a dead worker's index."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from tests.jobkit import make_job, run_prsd

FAKE_NVML = Path(__file__).resolve().parent.parent / "fake_pynvml.py"

# Each worker writes its GPU variables at init(); run() holds every mini-batch until
# WORKERS workers are up, so each of them claims a task before any finishes. The
# worker on GPU 1 dies on its first mini-batch (once), and its replacement must get 1
# (the other mini-batches wait for it, so the job cannot end first).
SCRIPT = """
    import json, os, time
    MARKS = os.environ["MARKER_DIR"]
    NAMES = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "PRSD_GPU_COUNT_FOUND",
             "AZ_BATCHAI_GPU_COUNT_FOUND")
    def init():
        from azureml_user.parallel_run import EntryScript
        env = {k: os.environ.get(k) for k in NAMES}
        with open(os.path.join(MARKS, EntryScript().agent_name + ".json"), "w") as f:
            json.dump(env, f)
    def run(mini_batch):
        deadline = time.monotonic() + 30
        want = int(os.environ["WORKERS"])
        while len([n for n in os.listdir(MARKS) if n.endswith(".json")]) < want:
            assert time.monotonic() < deadline, "workers did not all start"
            time.sleep(0.02)
        flag = os.path.join(MARKS, "died")
        if os.environ.get("CUDA_VISIBLE_DEVICES") == "1" and not os.path.exists(flag):
            open(flag, "w").close()
            os._exit(3)
        # After the death, hold the job open until the replacement has started.
        while os.path.exists(flag) and not os.path.exists(os.path.join(MARKS, "process004.json")):
            assert time.monotonic() < deadline, "no replacement worker started"
            time.sleep(0.02)
        return [os.path.basename(p) for p in mini_batch]
"""

YAML = """
    input_data: ./data
    mini_batch_size: "1"
    {resources}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
      environment_variables: {{MARKER_DIR: {marks}, WORKERS: "{workers}"}}
"""


def _gpu_env(marks: Path) -> dict[str, dict[str, str | None]]:
    return {p.stem: json.loads(p.read_text()) for p in marks.glob("*.json")}


def _started(main_log: str) -> dict[str, str | None]:
    found = re.findall(
        r"(process\d+) started \(pid \d+(?:, CUDA_VISIBLE_DEVICES=(\d+))?\)", main_log
    )
    return {name: gpu or None for name, gpu in found}


def test_two_gpus_four_workers_and_reuse_of_a_dead_workers_index(tmp_path: Path) -> None:
    """PRSD_GPU_COUNT=2, 4 workers: GPUs 0 and 1, two without; GPU 1's replacement gets 1."""
    marks = tmp_path / "marks"
    marks.mkdir()
    job = make_job(
        tmp_path,
        SCRIPT,
        YAML.format(
            resources="resources: {max_concurrency_per_instance: 4}", marks=marks, workers=4
        ),
        files=12,
    )
    env = {"PRSD_GPU_COUNT": "2"}
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1", env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    seen = _gpu_env(marks)
    gpus = {name: e["CUDA_VISIBLE_DEVICES"] for name, e in seen.items()}
    assert gpus == {
        "process000": "0",
        "process001": "1",
        "process002": None,
        "process003": None,
        "process004": "1",
    }
    for name in ("process000", "process001", "process004"):
        assert seen[name]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert {e["PRSD_GPU_COUNT_FOUND"] for e in seen.values()} == {"2"}
    assert {e["AZ_BATCHAI_GPU_COUNT_FOUND"] for e in seen.values()} == {"2"}
    main = r.main_logs()
    assert _started(main) == gpus
    assert "process001 exits with returncode 3: died while running mini-batch" in main
    assert "GPUs: 2 usable (0,1), found by PRSD_GPU_COUNT" in main
    crashed = [row for row in r.report() if row["status"] == "crashed"]
    assert [row["process_name"] for row in crashed] == ["process001"]
    assert len((r.job / "outputs" / "out.txt").read_text().splitlines()) == 12


def test_fake_nvml_with_a_lost_gpu(tmp_path: Path) -> None:
    """NVML finds 3 GPUs, GPU 1 is lost: 2 workers by default, on GPUs 0 and 2; logged."""
    marks = tmp_path / "marks"
    marks.mkdir()
    fake = tmp_path / "fakenvml"
    fake.mkdir()
    shutil.copy(FAKE_NVML, fake / "pynvml.py")
    job = make_job(tmp_path, SCRIPT, YAML.format(resources="", marks=marks, workers=2), files=4)
    env = {
        "PYTHONPATH": os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")]),
        "PRSD_GPU_COUNT": "",
        "PRSD_NVML_ALWAYS": "1",  # the fake stands for a driver this machine may lack
        "FAKE_NVML_GPUS": "3",
        "FAKE_NVML_UNHEALTHY": "1",
    }
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1", env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    seen = _gpu_env(marks)
    assert {name: e["CUDA_VISIBLE_DEVICES"] for name, e in seen.items()} == {
        "process000": "0",
        "process001": "2",
    }
    assert {e["PRSD_GPU_COUNT_FOUND"] for e in seen.values()} == {"2"}
    main = r.main_logs()
    assert "GPUs: 2 usable (0,2), found by NVML" in main
    assert "GPU 1 is unhealthy and is not handed to workers: GPU is lost" in main
    assert "with 2 workers, 2 GPUs" in main
