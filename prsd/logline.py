"""Lines the daemons append to a job's logs: one value never makes two lines.

Invariant: every line written through :func:`append_lines` holds no control
character (newline, carriage return, escape sequences, NUL, DEL) nor a Unicode line
separator other than its own final newline: such characters in a value that came
from a job (a job name, a path, an error message raised in ``run()``, a node id, a
result file's fields) are written as visible escapes (``\\n``, ``\\x1b``), so nobody
can forge a log line, a status line or a CSV row. The file is opened with
``O_NOFOLLOW``: a symlink planted in its place is refused (``OSError`` ELOOP), never
written through.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from prsd.fdio import write_all

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

_UNSAFE = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def one_line(text: str) -> str:
    """``text`` with every control character or line separator escaped visibly."""
    if text.isprintable():  # none of _UNSAFE's characters is printable: the common case
        return text
    return _UNSAFE.sub(lambda m: _NAMED.get(m.group(), f"\\x{ord(m.group()):02x}"), text)


def append_lines(path: Path, lines: Iterable[str], *, make_folder: bool = False) -> None:
    """Append ``lines`` (each escaped, then ended by a newline) in one write.

    With ``make_folder`` a missing folder is created, and only then: the common append
    costs one ``open`` (no ``mkdir`` and ``stat`` first, each a round trip on a mount).

    Raises:
        OSError: the folder is missing (without ``make_folder``) or the name is a
            symlink (ELOOP) or not writable.
    """
    data = "".join(one_line(line) + "\n" for line in lines).encode("utf-8", "replace")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError:
        if not make_folder:
            raise
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, flags, 0o644)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)
