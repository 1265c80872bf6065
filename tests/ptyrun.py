"""A command in a pseudo-terminal of its own, as a user runs it: Ctrl-C is the byte
``\\x03`` typed on the terminal, which the kernel turns into SIGINT for the terminal's
foreground process group (the command and any child left in that group)."""

from __future__ import annotations

import os
import pty
import threading
import time

from tests.helpers import wait_until


class PtyRun:
    """``argv`` started on a new pseudo-terminal; its output read in a thread."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: the terminal's session leader, in the foreground
            try:
                os.execvpe(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid = pid
        self.fd = fd
        self.out = bytearray()
        self.code: int | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:  # EIO: the terminal's last writer is gone
                return
            if not chunk:
                return
            self.out.extend(chunk)

    @property
    def text(self) -> str:
        return self.out.decode(errors="replace").replace("\r\n", "\n")

    def wait_for(self, part: str, timeout_s: float = 60) -> None:
        wait_until(lambda: part in self.text, timeout_s, f"{part!r} in the output {self.text!r}")

    def ctrl_c(self) -> None:
        os.write(self.fd, b"\x03")

    def wait(self, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        while self.code is None:
            got, status = os.waitpid(self.pid, os.WNOHANG)
            if got:
                self.code = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"still running after {timeout_s} s: {self.text!r}")
            time.sleep(0.05)
        self._reader.join(timeout=10)
        return self.code

    def kill(self) -> None:
        if self.code is None:
            try:
                os.kill(self.pid, 9)
                self.wait(30)
            except (ProcessLookupError, ChildProcessError):
                pass
        try:
            os.close(self.fd)
        except OSError:
            pass
