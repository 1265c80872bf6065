"""The resolver's own first error line, picked out of a build's output; pure.

Invariant: the line returned is text the tool printed (box-drawing marks and colour
codes removed), never prsd's paraphrase: the first line that starts with ``error:``,
``×``, ``ERROR``, a conda ``...Error:`` or ``CondaError``; when the lines after it give
its causes (``cause:``, ``╰─▶``, ``Because``), the deepest cause of that chain is
joined on (uv: "Failed to download ...: ... No space left on device"). When a source
build failed, the chain ends in the build's own output (uv's indented ``[stderr]`` /
``[stdout]`` blocks): the reason joined on is then the line of that output that says
why (a compiler's ``fatal error:``, else the last exception line, else the last
``error:`` line, else its last line), so the summary names the package and the reason
(``error: Failed to build `idx2numpy==1.2.3`: ModuleNotFoundError: ...``). No such
line: the last non-empty line of the output.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ERROR = re.compile(r"^(error:|×|ERROR|CondaError|[A-Za-z]+Error:|[A-Za-z]+NotFoundError)")
_CAUSE = re.compile(r"^(cause:|╰─▶|Because|- )")


_BLOCK = re.compile(r"^\[(stderr|stdout)\]$")
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b")


def first_error_line(output: str) -> str:
    """One line: the tool's first error (with its cause), or its last word."""
    pairs = [(_clean(raw), raw) for raw in output.splitlines()]
    pairs = [(line, raw) for line, raw in pairs if line]
    lines = [line for line, _ in pairs]
    for i, line in enumerate(lines):
        if _ERROR.match(line):
            causes = []
            for nxt in lines[i + 1 :]:
                if not _CAUSE.match(nxt):
                    break
                causes.append(re.sub(r"^(cause:|╰─▶)\s*", "", nxt))
            reason = _build_reason(pairs[i + 1 + len(causes) :])
            if reason:
                return f"{line.rstrip(':')}: {reason}"
            # A chain of causes (uv): the deepest one says what went wrong.
            return f"{line.rstrip(':')}: {causes[-1]}" if causes else line
    return lines[-1] if lines else "the build printed nothing"


def _build_reason(rest: list[tuple[str, str]]) -> str:
    """The reason in a failed source build's output blocks ("" when none follow)."""
    block: list[str] = []
    for i, (line, raw) in enumerate(rest):
        if _BLOCK.match(line):
            continue
        if not raw[:1].isspace() and not raw.lstrip().startswith("│"):
            break  # uv's own next line (``hint: ...``): the blocks have ended
        if i == 0:
            return ""  # not a build's output
        block.append(line)
    if not rest or not _BLOCK.match(rest[0][0]) or not block:
        return ""
    for line in block:
        if "fatal error:" in line:
            return line
    for pick in (_EXCEPTION.match, lambda text: "error:" in text.lower()):
        found = [line for line in block if pick(line)]
        if found:
            return found[-1]
    return block[-1]


def _clean(line: str) -> str:
    return _ANSI.sub("", line).strip().lstrip("│").strip()
