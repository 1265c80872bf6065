"""Terminal output of the command-line tools (``prsd run``, ``prsctl``), through rich."""

from __future__ import annotations

import sys

from rich.console import Console

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def say(text: str) -> None:
    """A line for the user on stdout (no markup interpretation)."""
    out.print(text, markup=False)


def error(text: str) -> None:
    """A one-line error on stderr: ``prog: error: text``."""
    err.print(f"{_prog()}: error: {text}", markup=False)


def _prog() -> str:
    return sys.argv[0].rsplit("/", 1)[-1] if sys.argv else "prsd"
