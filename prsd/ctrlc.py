"""The user's Ctrl-C during ``prsd run`` (of a job or a pipeline, run here or followed).

:class:`CtrlC` listens for SIGINT: the first asks for the cancel (as ``prsctl cancel``
does) and says so; a second leaves at once (:class:`LeftEarly`), withdrawing a cancel no
leader acted on, so what has not ended stays in the spool for a fleet. It loads neither
the leader nor the agent: a job handed to the daemons is followed with it alone.

Errors: a cancel that cannot be asked (an ``OSError``) is said, and a second Ctrl-C
still leaves.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


@dataclass(frozen=True)
class LeftEarly:
    """A second Ctrl-C: the process left without waiting; ``ended`` is the end state
    if it had ended by then ("" when it had not: it stays for a fleet)."""

    ended: str


class CtrlC:
    """The user's Ctrl-C during ``prsd run`` (of a job or a pipeline): the first asks for
    the cancel (``ask``: it returns how to withdraw it, or raises OSError) and says so;
    the second cancels ``scope`` and sets ``left``."""

    def __init__(
        self,
        what: str,
        ask: Callable[[], Callable[[], None]],
        where: Path,
        say: Callable[[str], None] | None,
    ):
        self.what = what  # "job <id>", "pipeline <id>"
        self.ask = ask
        self.where = where  # the folder the request is written in, for an error
        self.say = say or (lambda line: None)
        self.withdraw: Callable[[], None] | None = None
        self.asked = False
        self.left = False

    async def listen(self, scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            async for _ in signals:
                if self.asked:
                    self.left = True
                    scope.cancel()
                    return
                self.asked = True
                await anyio.to_thread.run_sync(self._ask_cancel)

    def _ask_cancel(self) -> None:
        try:
            self.withdraw = self.ask()
        except OSError as exc:
            self.say(
                f"Ctrl-C: cannot ask for the cancel of {self.what} ({exc.strerror or exc} "
                f"in {self.where}); Ctrl-C again to leave it in the spool"
            )
            return
        self.say(
            f"Ctrl-C: canceling {self.what} and waiting for its workers to stop "
            "(Ctrl-C again to leave now)"
        )

    def left_early(self, end_state: Callable[[], str]) -> LeftEarly:
        """(After this process stopped leading.) Withdraw an unanswered cancel; the state."""
        if self.withdraw is not None:
            self.withdraw()
        return LeftEarly(end_state())
