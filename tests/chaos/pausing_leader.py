"""``prsd leader`` with the seam test_stale_status passes in: it freezes itself (SIGSTOP)
just before it publishes a running job's status, once, when a file appears.

Usage, as a :class:`tests.fleet.Fleet` wrap: ``python pausing_leader.py PAUSE_FILE``
followed by the fleet's own ``python -m prsd.daemon leader ...`` command line, whose
arguments are run here, in this process, with the seam in place. The test creates
``PAUSE_FILE`` when it wants the freeze; the leader removes it, then stops itself, so
it freezes once. The leader's code holds no such hook: the test brings it.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import TYPE_CHECKING

from prsd import daemon
from prsd.leader.run import status

if TYPE_CHECKING:
    from prsd.leader.run.snapshot import JobSnapshot


def pause_before_status(pause: str) -> None:
    """Make every status write of a running job first freeze once ``pause`` exists."""
    publish = status.StatusWriter.write

    def write(self: status.StatusWriter, snap: JobSnapshot, now: float) -> bool:
        if snap.final is None:
            try:
                os.unlink(pause)
            except FileNotFoundError:
                pass
            else:
                os.kill(os.getpid(), signal.SIGSTOP)
        return publish(self, snap, now)

    status.StatusWriter.write = write  # type: ignore[method-assign]


def main(argv: list[str]) -> int:
    pause, command = argv[0], argv[1:]
    pause_before_status(pause)
    return daemon.main(command[command.index("prsd.daemon") + 1 :])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
