"""Daemon logs: structlog on stderr, JSON lines when not on a terminal (journald keeps them).

On a terminal the lines are ``key=value`` for people. Ids that apply to a line
(``job_id``, ``node_id``, ``mini_batch``) are passed with the call or bound for a
block with :func:`log_context`.

structlog is imported on the first line actually written, not before: importing it
pulls in ``rich`` and ``pygments`` (about 0.1 s), which ``prsd run`` (WARNING and
above) and most ``prsctl`` calls never need. :func:`get_logger` hands out loggers
that drop lines below the configured level without importing anything. The daemons
call :func:`load_now` at their start: an agent's first line is otherwise written
inside its first job, which would wait for the import.
"""

from __future__ import annotations

import logging
import sys
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator, MutableMapping

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "msg": logging.INFO,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "exception": logging.ERROR,
    "critical": logging.CRITICAL,
}

_ids: ContextVar[dict[str, str]] = ContextVar("prsd_log_ids", default={})  # noqa: B039


class _Settings:
    level = logging.INFO
    json_lines: bool | None = None
    applied = False


def configure(level: str = "INFO", *, json_lines: bool | None = None) -> None:
    """Set up the logs of a daemon or command (applied when the first line is written).

    Args:
        level: the lowest level written.
        json_lines: force JSON (True) or key-value (False); None picks JSON unless
            stderr is a terminal.
    """
    _Settings.level = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    _Settings.json_lines = json_lines
    _Settings.applied = False
    if "structlog" in sys.modules:
        _apply()


def load_now() -> None:
    """Import and set up structlog now (a daemon's start), not on the first line."""
    if not _Settings.applied:
        _apply()


def _merge_ids(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    for key, value in _ids.get().items():
        event_dict.setdefault(key, value)
    return event_dict


def _apply() -> None:
    import structlog

    json_lines = _Settings.json_lines
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
            _merge_ids,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_Settings.level),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )
    _Settings.applied = True


def _drop(*args: Any, **kwargs: Any) -> None:
    return None


class Logger:
    """A structlog logger made on its first line at or above the configured level."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._real: Any = None

    def __getattr__(self, method: str) -> Any:
        level = _LEVELS.get(method)
        if level is not None and level < _Settings.level:
            return _drop
        if not _Settings.applied:
            _apply()
        if self._real is None:
            import structlog

            self._real = structlog.get_logger(self.name)
        return getattr(self._real, method)


def get_logger(name: str) -> Logger:
    """The logger of one part of prsd (``prsd.agent``, ``prsd.leader``, ...)."""
    return Logger(name)


@contextmanager
def log_context(**ids: str) -> Iterator[None]:
    """Every daemon log line inside the block carries these ids (``job_id``, ``node_id``,
    ``mini_batch``), on top of what a call passes itself."""
    token = _ids.set({**_ids.get(), **ids})
    try:
        yield
    finally:
        _ids.reset(token)
