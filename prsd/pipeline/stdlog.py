"""A command step's ``logs/user/std_log.txt`` (Azure's name), gathered when the step ends.

The command runner writes what the command prints to ``std_log.txt`` in the node's
user log folder (``logs/user/entry_script_log/<node>/``), which the job's owner may
write. When the step has ended, the leader joins those files, node by node, into
``logs/user/std_log.txt``. The owner's folders are walked without following a link
(:func:`prsd.spool.dirfd.open_under`, ``O_NOFOLLOW``) and at most
:data:`MAX_BYTES` are kept from each file (its end), so a root leader never copies
a file the owner could not read, and a huge log cannot fill the spool twice.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

from prsd.spool.atomic import write_atomic
from prsd.spool.dirfd import UnsafeFolder, open_under
from prsd.spool.layout import valid_node_id
from prsd.spool.listing import names
from prsd.wire.logtree import STD_LOG_FILE, LogTree

if TYPE_CHECKING:
    from prsd.spool.layout import JobLayout

STD_LOG = STD_LOG_FILE
MAX_BYTES = 16 * 1024 * 1024


def publish_std_log(job: JobLayout) -> bool:
    """Write ``logs/user/std_log.txt`` from the nodes' files once; True if written now."""
    tree = LogTree.of_job(job.root)
    target = tree.std_log
    if os.path.lexists(target) or not os.path.isdir(tree.user):
        return False
    parts: list[bytes] = []
    try:
        top = open_under(
            tree.root, list(tree.entry_script_logs("-").parent.relative_to(tree.root).parts)
        )
    except UnsafeFolder:
        top = None
    if top is not None:
        try:
            nodes = [n for n in sorted(names(top)) if valid_node_id(n)]
            parts.extend(_node_log(top, node) for node in nodes)
        finally:
            os.close(top)
    write_atomic(target, b"".join(p for p in parts if p))
    return True


def _node_log(top: int, node: str) -> bytes:
    try:
        folder = os.open(node, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=top)
    except OSError:
        return b""
    try:
        fd = os.open(STD_LOG, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return b""
    finally:
        os.close(folder)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return b""
        skipped = max(0, info.st_size - MAX_BYTES)
        os.lseek(fd, skipped, os.SEEK_SET)
        data = os.read(fd, MAX_BYTES)
    finally:
        os.close(fd)
    head = f"[prsd] node {node}" + (f" (first {skipped} bytes left out)" if skipped else "")
    return head.encode() + b"\n" + data
