"""``prsctl env register|list`` and the environment lines of ``prsctl status JOB``.

Registered environments are Azure environment YAML files kept in the spool
(``<spool>/environments/<name>/<version>.yaml``, :mod:`prsd.envs.registry`); jobs name
them as ``azureml:<name>:<version>`` or ``azureml:<name>@latest``. The status lines
come from the nodes' reports (``jobs/<id>/nodes/<node>.json``, written by the
agents): ``building environment: PHASE`` with the time since it began, or the
one-line error of a build that failed (:func:`prsd.spool.nodereport.environment_line`).

Errors: :class:`~prsd.errors.PrsdError` (one line) for a file that is not an
environment or a version already registered; OSError for files that cannot be read
or written (prsctl's own handler words them).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prsd.errors import ExitCode, PrsdError
from prsd.spool.nodereport import NodeReport, environment_line

if TYPE_CHECKING:
    import argparse

    from prsd.spool.layout import SpoolLayout

# prsd.envs (YAML) and the views are imported by the commands that use them, so that
# every other prsctl command starts as fast as before.


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The ``env`` command: ``register FILE.yml`` and ``list``."""
    e: argparse.ArgumentParser = sub.add_parser(
        "env", help="registered environments (azureml:<name>:<version>)"
    )
    e.add_argument("action", choices=("register", "list"))
    e.add_argument("file", nargs="?", type=Path, help="an Azure environment YAML (register)")
    e.add_argument("--json", action="store_true")
    return e


def cmd_env(spool: SpoolLayout, args: argparse.Namespace) -> int:
    from prsd.envs import registry
    from prsd.envs.spec import EnvError

    out = sys.stdout.write
    if args.action == "register":
        if args.file is None:
            raise PrsdError("prsctl env register needs the environment's YAML file")
        try:
            name, version = registry.register(spool.root, args.file)
        except EnvError as exc:
            raise PrsdError(str(exc)) from None
        out(f"registered azureml:{name}:{version}\n")
        return ExitCode.OK
    known = registry.known(spool.root)
    if args.json:
        out(json.dumps(known, indent=1, sort_keys=True) + "\n")
        return ExitCode.OK
    if not known:
        out("no environments registered (prsctl env register FILE.yml)\n")
    for name, versions in sorted(known.items()):
        out(f"{name}\tversions {', '.join(versions)}\t(azureml:{name}@latest is {versions[-1]})\n")
    return ExitCode.OK


def environment_lines(spool: SpoolLayout, job_id: str, now: datetime | None = None) -> list[str]:
    """One line per node whose report says its environment is building or failed."""
    now = now or datetime.now(UTC)
    lines = []
    for path in sorted(spool.job(job_id).node_reports.glob("*.json")):
        try:
            report = NodeReport.decode(path.read_bytes())
        except (OSError, ValueError):  # ValueError: RecordError, a torn or foreign report
            continue
        lines.extend(node_environment_line(report, now))
    return lines


def node_environment_line(report: NodeReport, now: datetime) -> list[str]:
    """The status line for one node report (none when nothing is built or it is ready)."""
    line = environment_line(report.environment, now)
    return [f"node {report.node_id}: {line}"] if line else []
