"""A committed task whose mini-batches all succeeded is booked and merged as one unit.

The leader's driver runs on a real spool; a hand-made agent claims, writes result files
and commits by the spool's own renames. Tasks that hold several mini-batches and
succeed whole take the one-unit path; a task with a failed, short or unrun
mini-batch takes the per-mini-batch path; the output, the counts and the attempt rows
are the same exact ones either way.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

from prsd.leader.intake.intake import load_taken_job, take_in
from prsd.leader.run.job import JobDriver
from prsd.leader.run.joblogs import report_parts
from prsd.spool.claim import commit, list_pending, prepare_node, try_claim
from prsd.spool.opening import open_spool
from prsd.spool.taskrecords import ResultMeta, TaskBody
from prsd.submit import submit
from prsd.wire.records import FAILED, SUCCEEDED, Outcome
from tests.jobkit import ECHO_SCRIPT, ECHO_YAML, make_job

if TYPE_CHECKING:
    from prsd.spool.layout import JobLayout


FILES = 200
NODE = "n1"


def _agent_pass(
    layout: JobLayout, fail_first: set[int], short: set[int], tasks: list[tuple[int, set[int]]]
) -> None:
    """Run every pending task: rows ``row <i>`` per mini-batch; the mini-batches in
    ``fail_first`` fail on attempt 1, those in ``short`` return one element short."""
    prepare_node(layout, NODE)
    for path in list_pending(layout, 10_000):
        claim = try_claim(layout, NODE, path)
        assert claim is not None
        body = TaskBody.decode(claim.body)
        tasks.append((claim.task.attempt, {mb.index for mb in body.mini_batches}))
        payload = b""
        outcomes = []
        for mb in body.mini_batches:
            at = len(payload)
            if mb.index in fail_first and claim.task.attempt == 1:
                outcomes.append(Outcome(mb.index, FAILED, items=mb.items, error="boom", offset=at))
                continue
            data = f"row {mb.index}\n".encode()
            payload += data
            ok = mb.items - 1 if mb.index in short else mb.items
            outcomes.append(
                Outcome(
                    mb.index,
                    SUCCEEDED,
                    items=mb.items,
                    succeeded_items=ok,
                    offset=at,
                    length=len(data),
                    elapsed_s=0.002,
                )
            )
        result = layout.result(claim.task, NODE)
        result.parent.mkdir(parents=True, exist_ok=True)
        meta = ResultMeta(claim.task.name, NODE, tuple(outcomes))
        result.write_bytes(payload + meta.encode())
        assert commit(layout, NODE, claim.task)


def _run_job(
    tmp_path: Path, fail_first: set[int], short: set[int]
) -> tuple[JobDriver, list[tuple[int, set[int]]]]:
    spool = open_spool(tmp_path / "spool")
    job_id, _ = submit(make_job(tmp_path, ECHO_SCRIPT, ECHO_YAML, files=FILES), spool)
    layout = take_in(spool, job_id)
    assert layout is not None
    driver = JobDriver(layout, load_taken_job(layout), epoch=1, now=0.0)
    tasks: list[tuple[int, set[int]]] = []
    now = 0.0
    for _ in range(500):
        now += 0.2  # past the listing interval: every step reads done/
        if driver.step(now, []):
            break
        _agent_pass(layout, fail_first, short, tasks)
    assert driver.final is not None, "the job never ended"
    return driver, tasks


def _rows(driver: JobDriver) -> list[tuple[int, int, str]]:
    rows: list[tuple[int, int, str]] = []
    for path in report_parts(driver.layout):
        if path.exists():
            with open(path, newline="", encoding="utf-8") as f:
                rows += [(int(r[0]), int(r[1]), r[2]) for r in list(csv.reader(f))[1:]]
    return sorted(rows)


def _output(driver: JobDriver) -> str:
    return Path(driver.spec.append_row_to or "").read_text(encoding="utf-8")


def test_tasks_that_succeed_whole_are_booked_as_one_unit(tmp_path: Path) -> None:
    driver, tasks = _run_job(tmp_path, set(), set())
    assert driver.final is not None and driver.final.state == "Completed"
    assert max(len(t) for _, t in tasks) > 1, "no task held more than one mini-batch"
    assert driver.results.whole_tasks == len(tasks)  # every task: one unit
    assert _output(driver) == "".join(f"row {i}\n" for i in range(FILES))
    c = driver.ledger.counts()
    assert (c.succeeded_mbs, c.failed_mbs, c.items, c.succeeded_items) == (FILES, 0, FILES, FILES)
    assert driver.ledger.attempts == FILES
    assert _rows(driver) == [(i, 1, SUCCEEDED) for i in range(FILES)]


def test_a_task_with_a_failed_or_short_mini_batch_is_booked_per_mini_batch(
    tmp_path: Path,
) -> None:
    fail_first = {70, 71, 150}  # in packed tasks (the first 64 tasks hold one each)
    short = {100}
    driver, tasks = _run_job(tmp_path, fail_first, short)
    assert driver.final is not None and driver.final.state == "Completed with failures"
    assert "1 returned fewer elements" in driver.final.reason
    assert max(len(t) for _, t in tasks) > 1
    # every task but those holding a first-attempt failure or the short one: one unit
    odd = [t for a, t in tasks if (a == 1 and t & fail_first) or t & short]
    assert odd and driver.results.whole_tasks == len(tasks) - len(odd)
    assert _output(driver) == "".join(f"row {i}\n" for i in range(FILES))
    c = driver.ledger.counts()
    assert (c.succeeded_mbs, c.failed_mbs, c.partial_mbs) == (FILES, 0, 1)
    assert (c.items, c.succeeded_items, c.failed_items) == (FILES, FILES - 1, 1)
    want = [(i, 1, SUCCEEDED) for i in range(FILES) if i not in fail_first]
    want += [(i, 1, FAILED) for i in fail_first] + [(i, 2, SUCCEEDED) for i in fail_first]
    assert _rows(driver) == sorted(want)
    assert driver.ledger.attempts == FILES + len(fail_first)


def test_a_second_commit_of_a_booked_task_stops_the_job(tmp_path: Path) -> None:
    """Names already handled are passed over at later listings, but a commit of the
    same task by another node is a new name: it is still caught."""
    spool = open_spool(tmp_path / "spool")
    job_id, _ = submit(make_job(tmp_path, ECHO_SCRIPT, ECHO_YAML, files=FILES), spool)
    layout = take_in(spool, job_id)
    assert layout is not None
    driver = JobDriver(layout, load_taken_job(layout), epoch=1, now=0.0)
    driver.step(0.2, [])
    _agent_pass(layout, set(), set(), [])
    for k in range(3):  # ingested, then listed again twice
        driver.step(0.4 + 0.2 * k, [])
    first = next(iter(driver.table.ingested))
    assert not driver.step(1.0, []) and driver.table.ingested[first] == NODE
    done = next(layout.done.glob(f"*/{first}.{NODE}"))
    (done.parent / f"{first}.n2").write_bytes(done.read_bytes())  # a non-atomic rename
    assert driver.step(1.2, [])  # ended
    assert driver.final is not None and driver.final.state == "Failed"
    assert f"task {first} was committed by both {NODE} and n2" in driver.final.reason
