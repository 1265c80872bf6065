"""Daemon logs: structlog on stderr, JSON lines when not on a terminal (journald keeps them)."""

from __future__ import annotations

import logging
import sys

import structlog


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
