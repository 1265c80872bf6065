"""A job's owner side: the operations of :mod:`prsd.asowner.outputs`, done as its owner.

Promise: :func:`owner_side` gives the daemon one :class:`OwnerSide` per job. When
the daemon runs as root and the job's owner is not root, it is a :class:`Helper`:
one owner-side process (``spawn_as`` the owner, :mod:`prsd.asowner.server`) started
on first use, spoken to over a ``socketpair`` (:mod:`prsd.asowner.channel`), killed
by :meth:`OwnerSide.close` (the job's end). Otherwise the daemon is the owner already
(``prsd run`` as a user, root's own job, a non-root daemon running its own user's
jobs) and :class:`InProcess` does the same operations in the daemon.

Every wait on the helper is bounded (:data:`CALL_TIMEOUT_S`): a helper that hangs is
killed and the call fails, so the leader's loop is never held longer than that.

Errors: :class:`prsd.asowner.outputs.OwnerOpError` for a refusal (the kernel's, with
the path and errno); :class:`OwnerSideGone` when the helper cannot be started, died
(``kill -9``) or hung. Both are :class:`PrsdError`: the caller fails the one job.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from typing import TYPE_CHECKING, Any

from prsd.asowner import outputs, removal
from prsd.asowner.channel import Channel, ChannelError
from prsd.asowner.spawn import spawn_as
from prsd.errors import PrsdError
from prsd.owner import identity

if TYPE_CHECKING:
    from collections.abc import Sequence

    from prsd.owner import RunAs

CALL_TIMEOUT_S = 30.0
SERVER = "prsd.asowner.server"


class OwnerSideGone(PrsdError):
    """The owner-side process could not be started, died, or did not answer in time."""


class OwnerSide:
    """The operations on a job's user files (see :mod:`prsd.asowner.outputs`)."""

    def open_output(
        self, anchor: str, parts: Sequence[str], tmp: str, *, create: bool
    ) -> tuple[int, int]:
        return outputs.open_output(anchor, parts, tmp, create=create)

    def publish(
        self, dir_fd: int, anchor: str, parts: Sequence[str], tmp: str, final: str, *, durable: bool
    ) -> None:
        outputs.publish(dir_fd, anchor, parts, tmp, final, durable=durable)

    def discard(self, dir_fd: int, tmp: str) -> None:
        outputs.discard(dir_fd, tmp)

    def make_folder(self, anchor: str, parts: Sequence[str]) -> None:
        outputs.make_folder(anchor, parts)

    def open_read(self, path: str) -> int:
        return outputs.open_read(path)

    def empty(self, dir_fd: int) -> int:
        """Remove what the owner may inside the folder on ``dir_fd``; entries left."""
        return removal.empty_folder(dir_fd)

    def close(self) -> None:
        """Nothing to let go of in-process."""

    def revive(self) -> None:
        """After a failure: let the next call start afresh (a new helper)."""


class InProcess(OwnerSide):
    """The daemon is the owner: the operations run here."""


class Helper(OwnerSide):
    """The operations run in one owner-side process with ``run_as``'s ids."""

    def __init__(self, run_as: RunAs, *, timeout: float = CALL_TIMEOUT_S) -> None:
        self.run_as = run_as
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self._channel: Channel | None = None
        self._gone = ""

    def _start(self) -> Channel:
        if self._gone:
            raise OwnerSideGone(self._gone)
        if self._channel is not None:
            return self._channel
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.proc = spawn_as(
                self.run_as, SERVER, [str(theirs.fileno())], pass_fds=[theirs.fileno()]
            )
        except (OSError, subprocess.SubprocessError) as exc:
            mine.close()
            self._gone = (
                f"the owner-side process for {self.run_as.name} could not be started: {exc}"
            )
            raise OwnerSideGone(self._gone) from None
        finally:
            theirs.close()
        self._channel = Channel(mine, self.timeout)
        return self._channel

    def _call(self, request: dict[str, Any], fds: Sequence[int] = ()) -> list[int]:
        return self._ask(request, fds)[1]

    def _ask(
        self, request: dict[str, Any], fds: Sequence[int] = ()
    ) -> tuple[dict[str, Any], list[int]]:
        channel = self._start()
        try:
            answer, got = channel.call(request, fds)
        except ChannelError as exc:
            self._gone = (
                f"the owner-side process for {self.run_as.name} failed during "
                f"{request.get('op')}: {exc.one_line()}{self._exit_note()}"
            )
            self.close()
            raise OwnerSideGone(self._gone) from None
        if not answer.get("ok"):
            for fd in got:
                os.close(fd)
            raise outputs.OwnerOpError(
                str(answer.get("error", "refused")), int(answer.get("errno", 0))
            )
        return answer, got

    def _exit_note(self) -> str:
        code = None
        if self.proc is not None:
            try:  # a dead peer is reaped at once; a live (hung) one is waited for 0.5 s
                code = self.proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                code = None
        if code is None:
            return ""
        if code < 0:
            return f" (it was killed by signal {signal.Signals(-code).name})"
        return f" (it exited with status {code})"

    def open_output(
        self, anchor: str, parts: Sequence[str], tmp: str, *, create: bool
    ) -> tuple[int, int]:
        got = self._call(
            {
                "op": "open_output",
                "anchor": anchor,
                "parts": list(parts),
                "tmp": tmp,
                "create": create,
            }
        )
        if len(got) != 2:
            for fd in got:
                os.close(fd)
            raise OwnerSideGone("the owner-side process answered without the output's descriptors")
        return got[0], got[1]

    def publish(
        self, dir_fd: int, anchor: str, parts: Sequence[str], tmp: str, final: str, *, durable: bool
    ) -> None:
        request = {"op": "publish", "anchor": anchor, "parts": list(parts), "tmp": tmp,
                   "final": final, "durable": durable}  # fmt: skip
        self._call(request, [dir_fd])

    def discard(self, dir_fd: int, tmp: str) -> None:
        self._call({"op": "discard", "tmp": tmp}, [dir_fd])

    def make_folder(self, anchor: str, parts: Sequence[str]) -> None:
        self._call({"op": "make_folder", "anchor": anchor, "parts": list(parts)})

    def open_read(self, path: str) -> int:
        got = self._call({"op": "open_read", "path": path})
        if len(got) != 1:
            for fd in got:
                os.close(fd)
            raise OwnerSideGone("the owner-side process answered without a descriptor")
        return got[0]

    def empty(self, dir_fd: int) -> int:
        answer, got = self._ask({"op": "empty"}, [dir_fd])
        for fd in got:
            os.close(fd)
        left = answer.get("left", 0)
        return left if isinstance(left, int) else 0

    def revive(self) -> None:
        self.close()
        self._gone = ""

    def close(self) -> None:
        """End the helper: close the channel (it exits), kill it if it does not."""
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def owner_side(uid: int, gid: int) -> OwnerSide:
    """The owner side for a job of ``uid``/``gid``: a helper only where ids must change."""
    if os.geteuid() == 0 and uid != 0:
        return Helper(identity(uid, gid))
    return InProcess()
