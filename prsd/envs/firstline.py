"""The resolver's own first error line, picked out of a build's output; pure.

Invariant: the line returned is text the tool printed (box-drawing marks and colour
codes removed), never prsd's paraphrase: the first line that starts with ``error:``,
``×``, ``ERROR``, a conda ``...Error:`` or ``CondaError``; when the lines after it give
its causes (``cause:``, ``╰─▶``, ``Because``), the deepest cause of that chain is
joined on (uv: "Failed to download ...: ... No space left on device"). No such line:
the last non-empty line of the output.
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
            causes = []
            for nxt in lines[i + 1 :]:
                if not _CAUSE.match(nxt):
                    break
                causes.append(re.sub(r"^(cause:|╰─▶)\s*", "", nxt))
            # A chain of causes (uv): the deepest one says what went wrong.
            return f"{line.rstrip(':')}: {causes[-1]}" if causes else line
    return lines[-1] if lines else "the build printed nothing"


def _clean(line: str) -> str:
    return _ANSI.sub("", line).strip().lstrip("│").strip()
