"""Terminal output of the command-line tools (``prsd run``, ``prsctl``).

Plain lines go straight to stdout and stderr; ``out`` and ``err`` are rich consoles
for tables and live views, made (and rich imported, about 30 ms) on first use only.
On a terminal they fit its width; anywhere else (a pipe, a file) nothing is clipped
or wrapped, whatever ``COLUMNS`` says: lines are as wide as their content.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    out: Console
    err: Console

_consoles: dict[str, Any] = {}
WIDE = 4096  # columns of a console that is not a terminal: room for any row


def __getattr__(name: str) -> Any:
    if name in ("out", "err"):
        if name not in _consoles:
            from rich.console import Console

            stream = sys.stderr if name == "err" else sys.stdout
            width = None if stream.isatty() else WIDE
            _consoles[name] = Console(
                stderr=name == "err", highlight=False, soft_wrap=True, width=width
            )
        return _consoles[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def say(text: str) -> None:
    """A line for the user on stdout, as it is (no markup, no emoji codes)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def warn(text: str) -> None:
    """A one-line warning on stderr: ``prog: warning: text``."""
    sys.stderr.write(f"{_prog()}: warning: {text}\n")
    sys.stderr.flush()


def error(text: str) -> None:
    """A one-line error on stderr: ``prog: error: text``."""
    sys.stderr.write(f"{_prog()}: error: {text}\n")
    sys.stderr.flush()


def _prog() -> str:
    return sys.argv[0].rsplit("/", 1)[-1] if sys.argv else "prsd"
