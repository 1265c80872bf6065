"""The agent carries out every action its worker state machine returns, in one place,
and its log writes leave the event loop (real files, real threads)."""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
import threading
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
import anyio.to_thread

from prsd.agent.session import WorkerSession
from prsd.agent.workerstate import _TABLE, Action
from prsd.agent.writer import FileWriter

if TYPE_CHECKING:
    from pathlib import Path


def test_every_action_the_table_returns_has_a_branch_in_the_dispatcher() -> None:
    tree = ast.parse(textwrap.dedent(inspect.getsource(WorkerSession._carry_out)))
    handled = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "Action"
    }
    returned = {a.name for t in _TABLE.values() for a in t.actions}
    assert returned == {a.name for a in Action}, "an action no transition returns"
    assert handled == returned


def test_no_other_code_of_the_session_branches_on_an_action() -> None:
    source = inspect.getsource(WorkerSession)
    dispatcher = inspect.getsource(WorkerSession._carry_out)
    assert "Action." not in source.replace(dispatcher, "")


def test_writes_run_off_the_loop_in_order_and_close_drains(tmp_path: Path) -> None:
    out = tmp_path / "log.txt"
    threads: dict[int, int] = {}

    def line(n: int) -> None:
        threads[n] = threading.get_ident()
        with open(out, "a", encoding="utf-8") as f:
            f.write(f"{n}\n")

    async def main() -> int:
        writer = FileWriter()
        loop_thread = threading.get_ident()
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer.run)
            await anyio.lowlevel.checkpoint()
            for n in range(50):
                writer.put(functools.partial(line, n))
                if n % 7 == 0:
                    await anyio.lowlevel.checkpoint()
            # From a thread anyio started (an environment build): queued in order.
            await anyio.to_thread.run_sync(lambda: writer.put(lambda: line(50)))
            writer.put(lambda: line(51))
            await writer.close()
        writer.put(lambda: line(52))  # after the writer ended: inline
        return loop_thread

    loop_thread = anyio.run(main)
    assert out.read_text(encoding="utf-8").split() == [str(n) for n in range(53)]
    assert all(threads[n] != loop_thread for n in range(52)), "a write ran on the loop"
    assert threads[52] == loop_thread


def test_a_failing_write_ends_the_writer_with_its_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "log.txt"

    async def main() -> None:
        writer = FileWriter()
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer.run)
            await anyio.lowlevel.checkpoint()
            writer.put(functools.partial(missing.touch))
            await anyio.sleep(5)

    try:
        anyio.run(main)
    except BaseExceptionGroup as group:
        assert isinstance(group.exceptions[0], FileNotFoundError)
    else:
        raise AssertionError("the write's error was lost")
