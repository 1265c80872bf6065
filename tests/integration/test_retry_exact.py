"""``prsctl retry`` with real daemons: exact output after edits, after bisection, with a fix."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import pytest

from prsd.retryplan.plan import items_digest
from prsd.spool.jobid import make_job_id
from prsd.spool.jobowner import JobOwner
from tests.helpers import wait_until
from tests.jobkit import PRSD

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

PRSCTL = [sys.executable, "-m", "prsd.cli.prsctl"]

SCRIPT = """
    import os
    def run(mini_batch):
        rows = []
        for p in mini_batch:
            text = open(p).read().strip()
            if text == "bad":
                raise ValueError(f"{os.path.basename(p)} is bad")
            rows.append(f"{os.path.basename(p)}:{text}")
        return rows
"""

FIXED = """
    import os
    def run(mini_batch):
        rows = []
        for p in mini_batch:
            text = open(p).read().strip()
            rows.append(f"{os.path.basename(p)}:{'fixed' if text == 'bad' else text}")
        return rows
"""


def _job(root: Path, name: str, values: list[str], size: int, extra: str = "") -> Path:
    job = root / name
    (job / "code").mkdir(parents=True)
    (job / "code" / "score.py").write_text(textwrap.dedent(SCRIPT))
    (job / "data").mkdir()
    for i, v in enumerate(values):
        (job / "data" / f"item{i:05d}.txt").write_text(v + "\n")
    (job / "job.yaml").write_text(
        textwrap.dedent(f"""
        name: {name}
        input_data: ./data
        mini_batch_size: "{size}"
        resources: {{max_concurrency_per_instance: 2}}
        retry_settings: {{max_retries: 0, timeout: 30}}
        {extra}
        task:
          code: ./code
          entry_script: score.py
          append_row_to: ./outputs/out.txt
        """)
    )
    return job


def ctl(spool: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PRSCTL, *args, "--spool", str(spool)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _doc(spool: Path, job_id: str) -> dict[str, object]:
    return dict(json.loads(ctl(spool, "status", job_id, "--json").stdout))


def _ended(spool: Path, job_id: str) -> dict[str, object]:
    ended = ("Completed", "Completed with failures", "Failed", "Canceled")
    wait_until(lambda: _doc(spool, job_id)["state"] in ended, 90, f"job {job_id} to end")
    return _doc(spool, job_id)


def _submit(spool: Path, job: Path) -> str:
    r = ctl(spool, "submit", str(job))
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def _output(spool: Path, job_id: str) -> list[str]:
    return (spool / "jobs" / job_id / "outputs" / "out.txt").read_text().splitlines()


@pytest.fixture(scope="module")
def spool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A leader and an agent serving one spool for every case here."""
    spool = tmp_path_factory.mktemp("retry") / "spool"
    spool.mkdir()
    log = open(spool.parent / "daemons.log", "w")  # noqa: SIM115 (closed below)
    procs = [
        subprocess.Popen([*PRSD, "leader", "--spool", str(spool)], stderr=log),
        subprocess.Popen([*PRSD, "agent", "--spool", str(spool), "--node-id", "n1"], stderr=log),
    ]
    try:
        yield spool
    finally:
        for p in procs:
            p.kill()
            p.wait()
        log.close()


def test_retry_after_deleting_and_editing_inputs_equals_a_clean_run(spool: Path) -> None:
    """Bad files deleted, a good one edited: the retry's output is a clean run's, exactly."""
    values = [str(i) for i in range(12)]
    for bad in (4, 9, 10):
        values[bad] = "bad"
    job = _job(spool.parent, "edits", values, 3)
    first = _submit(spool, job)
    assert _ended(spool, first)["state"] == "Completed with failures"
    for bad in (4, 9, 10):
        (job / "data" / f"item{bad:05d}.txt").unlink()
    (job / "data" / "item00000.txt").write_text("0-edited\n")
    r = ctl(spool, "retry", first)
    assert r.returncode == 0, r.stderr
    assert "3 mini-batches" in r.stderr, r.stderr
    assert "3 failed input files were removed: item00004.txt, item00009.txt" in r.stderr
    assert "from item00000.txt" in r.stderr
    retry = r.stdout.strip()
    doc = _ended(spool, retry)
    assert (doc["state"], doc["total_mbs"], doc["succeeded_mbs"]) == ("Completed", 3, 3)
    clean = _submit(spool, job)
    assert _ended(spool, clean)["state"] == "Completed"
    expected = [f"item{i:05d}.txt:{i}" for i in range(12) if i not in (4, 9, 10)]
    expected[0] = "item00000.txt:0-edited"
    assert _output(spool, retry) == _output(spool, clean) == expected
    master = (spool / "jobs" / retry / "logs" / "sys" / "master_role.txt").read_text()
    assert "retry: 1 results of job" in master
    result = (spool / "jobs" / retry / "logs" / "job_result.txt").read_text()
    assert f"Retry: 1 results of job {first}" in result


def test_retry_after_bisection_runs_only_the_poison_with_fixed_code(spool: Path) -> None:
    """Bisection's good halves are kept; --code runs only the poison file, --set applies."""
    values = [str(i) for i in range(8)]
    values[2] = "bad"
    job = _job(spool.parent, "bisected", values, 4, "bisect_failed_mini_batches: true")
    first = _submit(spool, job)
    assert _ended(spool, first)["state"] == "Completed with failures"
    fixed = spool.parent / "fixed"
    fixed.mkdir()
    (fixed / "score.py").write_text(textwrap.dedent(FIXED))
    bad = ctl(spool, "retry", first, "--set", "retry_settings.bogus=1")
    assert bad.returncode == 2 and "bogus" in bad.stderr and len(bad.stderr.splitlines()) == 1
    assert not [p for p in (spool / "inbox").iterdir() if "bisected" in p.name]
    r = ctl(spool, "retry", first, "--code", str(fixed), "--set", "retry_settings.timeout=45")
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith("1 mini-batches"), r.stderr
    retry = r.stdout.strip()
    doc = _ended(spool, retry)
    assert (doc["state"], doc["total_mbs"]) == ("Completed", 1)
    expected = [f"item{i:05d}.txt:{'fixed' if i == 2 else i}" for i in range(8)]
    assert _output(spool, retry) == expected
    spec = json.loads((spool / "jobs" / retry / "spec.json").read_text())
    assert spec["timeout_s"] == 45
    plan = json.loads((spool / "jobs" / retry / "retry.json").read_text())
    assert plan["code"] and plan["earlier_code"] and plan["code"] != plan["earlier_code"]
    master = (spool / "jobs" / retry / "logs" / "sys" / "master_role.txt").read_text()
    assert f"code {plan['code']}" in master and f"code {plan['earlier_code']}" in master
    again = ctl(spool, "retry", retry)
    assert again.returncode == 2 and "nothing to retry" in again.stderr


def test_retry_of_another_owners_job_is_refused(spool: Path) -> None:
    """prsctl refuses it; a hand-made retry.json fails its job alone while others run."""
    values = ["0", "bad", "2"]
    job = _job(spool.parent, "theirs", values, 1)
    theirs = _submit(spool, job)
    assert _ended(spool, theirs)["state"] == "Completed with failures"
    # The owner the leader recorded at intake is what counts, never the folder's.
    (spool / "jobs" / theirs / "owner.json").write_bytes(JobOwner(54321, 54321, "54321").to_json())
    r = ctl(spool, "retry", theirs)
    assert r.returncode == 2 and "belongs to 54321" in r.stderr, r.stderr
    bad_id = make_job_id("forged")
    staging = spool / "inbox" / f".{bad_id}"
    shutil.copytree(job, staging)
    yaml_text = (staging / "job.yaml").read_text()
    (staging / "job.yaml").write_text(yaml_text.replace("./data", str(job / "data")))
    (staging / "retry.json").write_text(json.dumps({"of_job": theirs, "mode": "files"}))
    staging.rename(spool / "inbox" / bad_id)
    healthy = _job(spool.parent, "healthy", ["1", "2"], 1)
    good_id = _submit(spool, healthy)
    doc = _ended(spool, bad_id)
    assert doc["state"] == "Failed" and "belongs to 54321" in str(doc["reason"]), doc
    result = (spool / "jobs" / bad_id / "logs" / "job_result.txt").read_text()
    assert "belongs to 54321" in result
    assert _ended(spool, good_id)["state"] == "Completed"
    sneaky = make_job_id("sneaky")
    staging = spool / "inbox" / f".{sneaky}"
    shutil.copytree(job, staging)
    (staging / "job.yaml").write_text(yaml_text.replace("./data", str(job / "data")))
    (staging / "retry.json").write_text(json.dumps({"of_job": good_id, "mode": "files"}))
    first_input = str(job / "data" / "item00000.txt")
    entry = {"job": good_id, "res": "../../../../../../etc/hostname", "off": 0, "len": 5,
             "first": first_input, "n": 1, "dig": items_digest([first_input]),
             "t": 2**62}  # fmt: skip
    (staging / "retry_kept.jsonl").write_text(json.dumps(entry) + "\n")
    staging.rename(spool / "inbox" / sneaky)
    doc = _ended(spool, sneaky)
    assert doc["state"] == "Failed" and "is not a result file" in str(doc["reason"]), doc


TABLE_SCRIPT = """
    def run(mini_batch):
        if (mini_batch["v"] == "bad").any():
            raise ValueError("a bad row")
        return [f"{r.id}:{r.v}" for r in mini_batch.itertuples()]
"""


def test_csv_retry_keeps_unchanged_ranges_and_reruns_an_edited_file(spool: Path) -> None:
    """Tables match by byte range: a fixed file's ranges run again, the rest are kept."""
    job = _job(spool.parent, "table", [], 1)
    (job / "code" / "score.py").write_text(textwrap.dedent(TABLE_SCRIPT))
    yaml_text = (
        (job / "job.yaml").read_text().replace('mini_batch_size: "1"', 'mini_batch_size: "60"')
    )
    (job / "job.yaml").write_text(
        yaml_text.replace("input_data: ./data", "input_data: ./data\ninput_format: csv")
    )
    a = ["id,v"] + [f"{i},a{i}" for i in range(20)]
    b = ["id,v"] + [f"{i},{'bad' if i == 113 else f'b{i}'}" for i in range(100, 120)]
    (job / "data" / "a.csv").write_text("\n".join(a) + "\n")
    (job / "data" / "b.csv").write_text("\n".join(b) + "\n")
    first = _submit(spool, job)
    doc = _ended(spool, first)
    assert doc["state"] == "Completed with failures", doc
    failed = (spool / "jobs" / first / "logs" / "sys" / "failed_items.txt").read_text()
    assert "b.csv from line" in failed and "bytes" in failed
    (job / "data" / "b.csv").write_text("\n".join(b).replace("bad", "fixed") + "\n")
    r = ctl(spool, "retry", first)
    assert r.returncode == 0, r.stderr
    retry = r.stdout.strip()
    doc = _ended(spool, retry)
    assert doc["state"] == "Completed", doc
    kept = json.loads((spool / "jobs" / retry / "retry_order.json").read_text())["kept"]
    assert kept >= 1  # a.csv's ranges were not run again
    clean = _submit(spool, job)
    assert _ended(spool, clean)["state"] == "Completed"
    assert _output(spool, retry) == _output(spool, clean)
    assert len(_output(spool, retry)) == 40 and "113:fixed" in _output(spool, retry)


SKIPPING = """
    import os
    def run(mini_batch):
        texts = [(os.path.basename(p), open(p).read().strip()) for p in mini_batch]
        return [f"{name}:{text}" for name, text in texts if text != "bad"]
"""


def test_a_short_result_runs_again_whole(spool: Path) -> None:
    """run() skipped an input (append_row): the retry runs that mini-batch again."""
    job = _job(spool.parent, "short", ["0", "bad", "2", "3"], 2)
    (job / "code" / "score.py").write_text(textwrap.dedent(SKIPPING))
    first = _submit(spool, job)
    doc = _ended(spool, first)
    assert (doc["state"], doc["partial_mbs"]) == ("Completed with failures", 1), doc
    listed = (spool / "jobs" / first / "logs" / "sys" / "failed_items.txt").read_text()
    assert "item00001.txt\t000000000\tpartial\trun() returned 1 of 2 elements" in listed
    fixed = spool.parent / "fixed-short"
    fixed.mkdir()
    (fixed / "score.py").write_text(textwrap.dedent(FIXED))
    r = ctl(spool, "retry", first, "--code", str(fixed))
    assert r.returncode == 0 and r.stderr.startswith("1 mini-batches"), r.stderr
    retry = r.stdout.strip()
    assert _ended(spool, retry)["state"] == "Completed"
    expected = [f"item{i:05d}.txt:{'fixed' if i == 1 else i}" for i in range(4)]
    assert _output(spool, retry) == expected


GROUPS = """
    def run(mini_batch):
        key = mini_batch.attrs["partition_key_value"]["store"]
        if key == "b" and (mini_batch["v"] == "bad").any():
            raise ValueError("store b has a bad row")
        return [f"{key}:{r.v}" for r in mini_batch.itertuples()]
"""


def test_partition_groups_are_kept_by_key_and_a_changed_table_is_refused(spool: Path) -> None:
    """Groups match by key values; once a file changed, no group can be kept: refused."""
    job = _job(spool.parent, "groups", [], 1)
    (job / "code" / "score.py").write_text(textwrap.dedent(GROUPS))
    text = (job / "job.yaml").read_text().replace('mini_batch_size: "1"', "partition_keys: [store]")
    (job / "job.yaml").write_text(
        text.replace("input_data: ./data", "input_data: ./data\ninput_format: csv")
    )
    (job / "data" / "t.csv").write_text("store,v\na,1\nb,bad\na,2\nb,3\n")
    (job / "data" / "u.csv").write_text("store,v\nc,9\na,7\n")
    first = _submit(spool, job)
    assert _ended(spool, first)["state"] == "Completed with failures"
    fixed = spool.parent / "fixed-groups"
    fixed.mkdir()
    (fixed / "score.py").write_text(textwrap.dedent(GROUPS.replace('"bad"', '"never"')))
    r = ctl(spool, "retry", first, "--code", str(fixed))
    assert r.returncode == 0 and r.stderr.startswith("1 mini-batches"), r.stderr
    retry = r.stdout.strip()
    assert _ended(spool, retry)["state"] == "Completed"
    assert _output(spool, retry) == ["a:1", "a:2", "a:7", "b:bad", "b:3", "c:9"]
    (job / "data" / "u.csv").unlink()  # group a loses a row: it cannot be kept
    refused = ctl(spool, "retry", first)
    assert refused.returncode == 2, refused.stderr
    assert "partition groups draw rows from every file" in refused.stderr
    assert "data/" in refused.stderr
