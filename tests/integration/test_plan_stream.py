"""The plan stream from a real planner process (prsd.leader.plan.planstream): a planner
killed with ``kill -9`` mid-plan, one that hangs (SIGSTOP), one that fails; the
leader's reads never wait past their bound. And what the leader checks before it
starts one: the owner record (fail closed) and the planner's private folders."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from typing import TYPE_CHECKING

import pytest

from prsd.errors import InputError
from prsd.jobspec.load import load_job_spec
from prsd.leader.plan.planhelper import encode_request
from prsd.leader.plan.planowner import private_folders
from prsd.leader.plan.planstream import HelperPlan, open_plan
from prsd.leader.plan.planwire import Record, encode
from prsd.owner import identity
from prsd.spool.jobowner import JobOwner, write_job_owner
from prsd.spool.layout import SpoolLayout
from prsd.wire.records import MiniBatch

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.jobspec import JobSpec
    from prsd.spool.layout import JobLayout

FILES = 5_000  # about 500 kB of records: far more than a pipe holds


def _job(tmp_path: Path, files: int, input_data: str = "./data", extra: str = "") -> Path:
    job = tmp_path / "job"
    (job / "code").mkdir(parents=True)
    (job / "code" / "score.py").write_text("def run(mb):\n    return mb\n")
    data = job / "data"
    data.mkdir()
    for i in range(files):
        (data / f"f{i:06d}.txt").write_bytes(b"")
    (job / "job.yaml").write_text(
        textwrap.dedent(f"""\
        type: parallel
        input_data: {input_data}
        mini_batch_size: "1"
        task:
          code: ./code
          entry_script: score.py
          append_row_to: ./outputs/out.txt
        """)
        + extra
    )
    return job


def _start(job: Path, silence: float = 60.0) -> tuple[HelperPlan, list[tuple[str, str]]]:
    spec = load_job_spec(job)
    skipped: list[tuple[str, str]] = []
    plan = HelperPlan.start(
        None,
        encode_request(spec, None, None),
        on_skip=lambda path, why: skipped.append((path, why)),
        on_order=lambda order: None,
        name=spec.input.name,
        silence=silence,
    )
    return plan, skipped


def _in_order(mbs: list[MiniBatch]) -> None:
    assert [mb.index for mb in mbs] == list(range(len(mbs)))


def test_the_whole_plan_arrives_in_order(tmp_path: Path) -> None:
    job = _job(tmp_path, 500)
    os.mkfifo(job / "data" / "zz-fifo")
    plan, skipped = _start(job)
    got: list[MiniBatch] = []
    deadline = time.monotonic() + 60
    while not plan.ended and time.monotonic() < deadline:
        got += plan.pull(64, 0.1)
    assert plan.ended
    _in_order(got)
    assert [mb.payload for mb in got] == [[str(job / "data" / f"f{i:06d}.txt")] for i in range(500)]
    assert skipped == [(str(job / "data" / "zz-fifo"), "not a regular file (a FIFO)")]
    plan.close()
    assert plan.proc.returncode == 0, "it exited on its own"


def test_a_planner_killed_mid_plan_fails_with_its_signal(tmp_path: Path) -> None:
    plan, _ = _start(_job(tmp_path, FILES))
    got = plan.pull(10, 30.0)
    assert len(got) == 10
    os.kill(plan.proc.pid, signal.SIGKILL)
    with pytest.raises(InputError) as caught:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got += plan.pull(1000, 0.2)
    message = str(caught.value)
    assert "ended before its plan was complete (killed by signal 9)" in message, message
    _in_order(got)
    assert len(got) < FILES, "killed mid-plan: what was sent before arrived, nothing more"
    assert plan.proc.returncode == -signal.SIGKILL
    plan.close()


def test_a_silent_planner_is_stopped_and_no_read_waits_past_its_bound(tmp_path: Path) -> None:
    plan, _ = _start(_job(tmp_path, FILES), silence=1.5)
    got = plan.pull(1, 30.0)
    os.kill(plan.proc.pid, signal.SIGSTOP)
    started = time.monotonic()
    with pytest.raises(InputError) as caught:
        while time.monotonic() - started < 30:
            before = time.monotonic()
            got += plan.pull(100, 0.2)
            assert time.monotonic() - before < 1.0, "a read waited past its bound"
    assert "sent nothing for" in str(caught.value) and "was stopped" in str(caught.value)
    assert time.monotonic() - started < 10
    assert plan.proc.returncode is not None, "the stopped planner was killed and reaped"
    _in_order(got)


def test_the_planners_own_error_ends_the_plan(tmp_path: Path) -> None:
    job = _job(tmp_path, 0, "./data/in.csv", "input_format: csv\n")
    os.mkfifo(job / "data" / "in.csv")
    plan, _ = _start(job)
    started = time.monotonic()
    with pytest.raises(InputError) as caught:
        while time.monotonic() - started < 30:
            plan.pull(10, 0.2)
    assert str(caught.value) == f"input {job / 'data' / 'in.csv'} is a FIFO, not a regular file"
    plan.close()
    assert plan.proc.returncode == 1


def _layout(tmp_path: Path) -> tuple[JobLayout, JobSpec]:
    job = _job(tmp_path, 3)
    layout = SpoolLayout(tmp_path / "spool").job("j1")
    layout.root.mkdir(parents=True)
    return layout, load_job_spec(job)


def test_a_job_without_a_valid_owner_record_is_never_planned(tmp_path: Path) -> None:
    """Fail closed under a root daemon: no record, or one the owner wrote, refuses."""
    assert os.geteuid() == 0, "a root daemon's rule (the suite runs as root)"
    layout, spec = _layout(tmp_path)
    with pytest.raises(InputError, match="owner is unknown, so its input is not read"):
        open_plan(spec, layout, lambda path, why: None)
    layout.owner_record.write_bytes(JobOwner(0, 0, "root").to_json())
    os.chown(layout.owner_record, 4242, 4242)  # planted: not the daemons' file
    with pytest.raises(InputError, match="owner is unknown"):
        open_plan(spec, layout, lambda path, why: None)
    assert not (layout.root / "partitions").exists(), "nothing made for a refused job"


def test_the_planners_folders_are_the_owners_and_never_a_link(tmp_path: Path) -> None:
    layout, spec = _layout(tmp_path)
    write_job_owner(layout, JobOwner(4242, 4343, "someone"))
    (layout.root / "mltable").symlink_to(tmp_path)
    with pytest.raises(InputError, match="mltable/ folder cannot be used: .* symbolic link"):
        open_plan(spec, layout, lambda path, why: None)
    (layout.root / "mltable").unlink()
    (layout.root / "partitions").chmod(0o755)  # made before the refusal: taken back
    private_folders(layout, identity(4242, 4343))
    for name in ("partitions", "mltable"):
        info = (layout.root / name).lstat()
        assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (4242, 4343, 0o700)


def _forged(lines: bytes) -> HelperPlan:
    """A real process that writes ``lines`` as a planner would, then waits to be stopped."""
    code = (
        f"import sys, time; sys.stdout.buffer.write({lines!r}); sys.stdout.flush(); time.sleep(60)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    return HelperPlan(proc, on_skip=lambda p, w: None, on_order=lambda o: None, name="x", who="t")


@pytest.mark.parametrize(
    ("lines", "words"),
    [
        (
            encode(Record("mb", mb=MiniBatch(0, ["/a"])))
            + encode(Record("mb", mb=MiniBatch(5, []))),
            "sent mini-batch 5 where 1 was due",
        ),
        (b'{"t": "mb"}\n', "the input planner sent a bad record"),
        (b"\x00garbage\n", "not JSON"),
    ],
)
def test_a_forged_record_fails_the_plan(lines: bytes, words: str) -> None:
    """The planner runs with the owner's ids, so its records are checked, not believed."""
    plan = _forged(lines)
    got: list[MiniBatch] = []
    try:
        with pytest.raises(InputError, match=words):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                got += plan.pull(10, 0.2)
        assert [mb.index for mb in got] in ([], [0])
    finally:
        plan.close()
    assert plan.proc.returncode == -signal.SIGKILL
