"""``EntryScript``: the helper Azure's entry scripts use (``from azureml_user.parallel_run import EntryScript``).

A per-process singleton. Inside a worker the host configures it from the ``hello``
frame before the entry script is imported, so a script may call ``EntryScript()`` at
import time. Outside a worker (a user unit-testing a script) it works with defaults,
as Azure's ``DummyEntryScript`` does: the logger writes to stderr, every folder is the
current directory, ``agent_name`` is ``process000``.

Standard library only, Python 3.7 syntax: this runs under the job's interpreter.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING, Any, ClassVar

from prsd.worker.logs import level_number, utc_formatter

if TYPE_CHECKING:
    from prsd.wire.hello import Hello

# Azure's entry-script log format (old driver), written in UTC.
LOG_FORMAT = "%(asctime)s|%(name)s|%(levelname)s|%(process)d|%(thread)d|%(funcName)s()|%(message)s"


class EntryScript:
    """Per-process facts and the user log for an entry script.

    Attributes:
        logger: writes to ``logs/user/entry_script_log/<node_id>/<process>.log.txt``
            at the job's ``logging_level`` (stderr outside a worker).
        log_dir: ``logs/user/entry_script_log/<node_id>/``.
        output_dir: the job's output folder (also ``AZUREML_BI_OUTPUT_PATH``).
        working_dir: this worker's own folder (the current directory at start).
        agent_name: the worker's name, ``processNNN``.
        node_id: the node this worker runs on.
        job_id: the job's id.
        config: the resolved job settings (a dict).
        logging_level: the job's logging level name (``INFO``).
    """

    _instance: ClassVar[EntryScript | None] = None
    _hello: ClassVar[Hello | None] = None

    logger: logging.Logger
    log_dir: str
    output_dir: str
    working_dir: str
    agent_name: str
    node_id: str
    job_id: str
    config: dict[str, Any]
    logging_level: str

    # typing.Self is Python 3.11+; this file runs under 3.7.
    def __new__(cls, logging_level: str | int | None = None) -> EntryScript:  # noqa: PYI034
        """Return the one instance of this process, creating it on first use."""
        if cls._instance is None:
            instance = super().__new__(cls)
            instance._populate(cls._hello)
            cls._instance = instance
        return cls._instance

    def __init__(self, logging_level: str | int | None = None) -> None:
        """Optionally change the logger's level (``"DEBUG"`` or ``logging.DEBUG``)."""
        if logging_level is not None:
            self.logger.setLevel(level_number(logging_level))

    def _populate(self, hello: Hello | None) -> None:
        if hello is None:
            cwd = os.getcwd()
            self.log_dir = self.output_dir = self.working_dir = cwd
            self.agent_name, self.node_id, self.job_id = "process000", "0", "local"
            self.config, self.logging_level = {}, "INFO"
            self.logger = _standalone_logger()
            return
        self.log_dir = hello.log_dir
        self.output_dir = hello.output_dir
        self.working_dir = hello.working_dir
        self.agent_name = hello.process_name
        self.node_id = hello.node_id
        self.job_id = hello.job_id
        self.config = hello.config
        self.logging_level = hello.logging_level.upper()
        self.logger = _worker_logger(hello)


def configure_worker(hello: Hello) -> None:
    """Set up the singleton for this worker (the host calls this before the import)."""
    EntryScript._hello = hello
    EntryScript._instance = None
    EntryScript()


def _worker_logger(hello: Hello) -> logging.Logger:
    # Azure names it "<ip>_<process>"; the node id plays the ip's part here.
    logger = logging.getLogger(f"{hello.node_id}_{hello.process_name}")
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    os.makedirs(os.path.dirname(hello.entry_log_file) or ".", exist_ok=True)
    handler = logging.FileHandler(hello.entry_log_file, mode="a", encoding="utf-8", delay=True)
    handler.setFormatter(utc_formatter(LOG_FORMAT))
    logger.addHandler(handler)
    logger.setLevel(level_number(hello.logging_level))
    logger.propagate = False  # stdout holds print() and the root logger, not this log
    return logger


def _standalone_logger() -> logging.Logger:
    logger = logging.getLogger("entry_script")
    logger.setLevel(logging.INFO)
    # Propagate, so pytest's caplog sees the records; print them ourselves only when
    # nothing else would.
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(utc_formatter(LOG_FORMAT))
        logger.addHandler(handler)
    return logger
