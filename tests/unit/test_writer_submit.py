"""Calls queued behind the job's file writes (prsd.agent.writer.FileWriter.submit): the
order, the one thread hop at a task's end, and where a call's error goes. Real threads,
real files; the batch count is read from the writer's own batch function."""

from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
import pytest

from prsd.agent import writer as writer_module
from prsd.agent.writer import FileWriter

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the batches the writer hands to its thread."""
    sizes: list[int] = []
    real = writer_module._write_all

    def counted(batch: list[Callable[[], object]]) -> None:
        sizes.append(len(batch))
        real(batch)

    monkeypatch.setattr(writer_module, "_write_all", counted)
    return sizes


def test_a_tasks_records_commit_and_next_claim_are_one_hop_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = _counting(monkeypatch)
    log = tmp_path / "log.txt"
    order: list[str] = []
    threads: set[int] = set()

    def step(name: str) -> str:
        threads.add(threading.get_ident())
        with log.open("a", encoding="utf-8") as f:
            f.write(name + "\n")
        order.append(name)
        return name

    async def main() -> tuple[str, str]:
        writer = FileWriter()
        got: list[str] = []

        async def claim() -> None:  # started in the same turn, like the claim ahead
            got.append(await writer.call(lambda: step("claim")))

        async with anyio.create_task_group() as tg:
            tg.start_soon(writer.run)
            await anyio.lowlevel.checkpoint()  # the writer waits for its bell
            writer.put(functools.partial(step, "records"))
            commit = writer.submit(lambda: step("commit"))
            tg.start_soon(claim)
            committed = await commit.wait()
            await writer.close()
        return committed, got[0]

    assert anyio.run(main) == ("commit", "claim")
    assert order == ["records", "commit", "claim"]
    assert log.read_text(encoding="utf-8").split() == order
    assert sizes == [3], f"batches of {sizes}: more than one thread hop"
    assert threading.get_ident() not in threads


def test_a_calls_error_is_its_callers_and_the_writer_goes_on(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "result.txt"
    after = tmp_path / "after.txt"

    async def main() -> str:
        writer = FileWriter()
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer.run)
            await anyio.lowlevel.checkpoint()
            failing = writer.submit(lambda: missing.write_bytes(b"x"))
            writer.put(functools.partial(after.write_text, "written", encoding="utf-8"))
            with pytest.raises(FileNotFoundError):
                await failing.wait()
            await writer.close()
        return after.read_text(encoding="utf-8")

    assert anyio.run(main) == "written"


def test_a_call_behind_a_failing_write_still_runs_and_the_write_ends_the_writer(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "no-such-folder" / "log.txt"
    result = tmp_path / "result.txt"
    results: list[int] = []

    async def main() -> None:
        writer = FileWriter()
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer.run)
            await anyio.lowlevel.checkpoint()
            writer.put(missing.touch)
            call = writer.submit(lambda: result.write_bytes(b"kept"))
            with anyio.CancelScope(shield=True):  # as a commit waits
                results.append(await call.wait())

    with pytest.raises(BaseExceptionGroup) as caught:
        anyio.run(main)
    assert isinstance(caught.value.exceptions[0], FileNotFoundError)
    assert results == [4]
    assert result.read_bytes() == b"kept"


def test_without_a_running_writer_a_call_runs_in_a_thread_of_its_own() -> None:
    async def main() -> tuple[int, int, int]:
        writer = FileWriter()
        before = await writer.call(threading.get_ident)  # never started
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer.run)
            await anyio.lowlevel.checkpoint()
            await writer.close()
        after = await writer.call(threading.get_ident)  # ended
        return threading.get_ident(), before, after

    loop, before, after = anyio.run(main)
    assert before != loop
    assert after != loop


def test_a_call_cancelled_while_queued_still_hands_its_result_over() -> None:
    """A claim queued behind a slow write, its job run cancelled meanwhile: the claimed
    task still reaches the caller (which keeps it to hand back), as a thread call's would."""
    release = threading.Event()
    kept: list[str] = []

    async def main() -> None:
        writer = FileWriter()

        async def claim() -> None:
            with anyio.CancelScope() as scope:
                scope.cancel()  # cancelled before the writer has even begun
                kept.append(await writer.call(lambda: "task-7"))
                await anyio.lowlevel.checkpoint()  # the cancellation lands here
                kept.append("not reached")

        async with anyio.create_task_group() as tg:
            tg.start_soon(writer.run)
            await anyio.lowlevel.checkpoint()
            writer.put(lambda: release.wait(5))  # a write that stalls until released
            tg.start_soon(claim)
            await anyio.sleep(0.2)
            release.set()
            await writer.close()

    anyio.run(main)
    assert kept == ["task-7"]
