"""The resolver's own first error line, picked out of a build's output; pure.

Invariant: the line returned is text the tool printed (box-drawing marks and colour
codes removed), never prsd's paraphrase: the first line that starts with ``error:``,
``×``, ``ERROR``, a conda ``...Error:`` or ``CondaError``; when it ends in a colon or
names no cause and the next line gives the cause (``cause:``, ``╰─▶``, ``Because``),
that line is joined on. No such line: the last non-empty line of the output.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ERROR = re.compile(r"^(error:|×|ERROR|CondaError|[A-Za-z]+Error:|[A-Za-z]+NotFoundError)")
_CAUSE = re.compile(r"^(cause:|╰─▶|Because|- )")


def first_error_line(output: str) -> str:
    """One line: the tool's first error (with its cause), or its last word."""
    lines = [_clean(line) for line in output.splitlines()]
    lines = [line for line in lines if line]
    for i, line in enumerate(lines):
        if _ERROR.match(line):
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if nxt and _CAUSE.match(nxt):
                cause = re.sub(r"^(cause:|╰─▶)\s*", "", nxt)
                return f"{line.rstrip(':')}: {cause}"
            return line
    return lines[-1] if lines else "the build printed nothing"


def _clean(line: str) -> str:
    return _ANSI.sub("", line).strip().lstrip("│").strip()
