"""Daemon logs: structlog on stderr, JSON lines when not on a terminal (journald keeps them).

On a terminal the lines are ``key=value`` for people. Ids that apply to a line
(``job_id``, ``node_id``, ``mini_batch``) are passed with the call or bound for a
block with :func:`log_context`.
"""

from __future__ import annotations

import logging
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from collections.abc import Iterator


def configure(level: str = "INFO", *, json_lines: bool | None = None) -> None:
    """Set up structlog for a daemon or command.

    Args:
        level: the lowest level written.
        json_lines: force JSON (True) or key-value (False); None picks JSON unless
            stderr is a terminal.
    """
    if json_lines is None:
        json_lines = not sys.stderr.isatty()
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer()
        if json_lines
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
        ),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )


@contextmanager
def log_context(**ids: str) -> Iterator[None]:
    """Every daemon log line inside the block carries these ids (``job_id``, ``node_id``,
    ``mini_batch``), on top of what a call passes itself."""
    with structlog.contextvars.bound_contextvars(**ids):
        yield
