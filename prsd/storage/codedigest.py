"""The digest of a job's code snapshot: what ``origin.json`` and a retry plan record.

A short digest (blake2b, 8 bytes) of every file's path relative to the snapshot and
its bytes, walked in name order, so the same snapshot always gives the same digest.
The client records it at submit (``origin.json``'s ``code``) and when it writes a
retry; a retry compares it with the earlier job's to say whether the code changed.
Never raises: a file that cannot be read counts as ``?``.
"""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


def code_digest(folder: Path) -> str:
    """A short digest of a code snapshot: every file's relative path and bytes."""
    h = hashlib.blake2b(digest_size=8)
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            h.update(os.path.relpath(path, folder).encode("utf-8", "surrogateescape") + b"\0")
            try:
                with open(path, "rb") as f:
                    h.update(f.read())
            except OSError:
                h.update(b"?")
    return h.hexdigest()
