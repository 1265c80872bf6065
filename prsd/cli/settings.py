"""The settings ``prsctl`` reads: the environment first, then the daemons' ``prsd.env``.

A user's shell rarely exports ``PRSD_SPOOL``; the administrator already wrote it in
``/etc/prsd/prsd.env`` (readable by everyone, docs/deploy.md), so ``prsctl`` reads the
same file and every user finds the spool, the allowed roots and the admin group the
daemons use. ``PRSD_ENV_FILE`` names another file (an unusual install, a test). A
missing or unreadable file is no file; a line that is not ``NAME=value`` is skipped,
as systemd skips it.

Errors: :class:`NoSpool` when no spool is given anywhere (``prsctl submit`` never
invents one: a job dropped into a folder no leader serves waits forever).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prsd.errors import PrsdError

if TYPE_CHECKING:
    from collections.abc import Mapping

ENV_FILE_ENV = "PRSD_ENV_FILE"
DEFAULT_ENV_FILE = Path("/etc/prsd/prsd.env")
SPOOL_ENV = "PRSD_SPOOL"
LOCAL_SPOOL = Path("spool")  # where `prsd run` puts its spool by default


class NoSpool(PrsdError):
    """No ``--spool``, no ``PRSD_SPOOL`` in the environment or the settings file."""


@dataclass(frozen=True)
class Setting:
    """A value and where it came from, for messages."""

    value: str
    source: str


def parse_env_text(text: str) -> dict[str, str]:
    """``NAME=value`` lines (comments, blank lines and anything else skipped; quotes removed)."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name.strip()] = value
    return values


def env_file(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get(ENV_FILE_ENV) or DEFAULT_ENV_FILE)


def setting(name: str, environ: Mapping[str, str] | None = None) -> Setting | None:
    """``name`` from the environment, else from the settings file; None when unset or empty."""
    env = os.environ if environ is None else environ
    if env.get(name, "").strip():
        return Setting(env[name].strip(), name)
    path = env_file(env)
    try:
        values = parse_env_text(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    value = values.get(name, "").strip()
    return Setting(value, f"{name} in {path}") if value else None


def spool_folder(given: Path | None, *, for_submit: bool) -> Path:
    """The spool a command works on: ``--spool``, else ``PRSD_SPOOL`` (environment, file).

    Commands that only read also accept ``./spool`` when it is a spool (``prsd run``'s);
    ``submit`` never does, because nothing serves that folder.

    Raises:
        NoSpool: none of them names a spool.
    """
    if given is not None:
        return given
    found = setting(SPOOL_ENV)
    if found is not None:
        return Path(found.value)
    if not for_submit and (LOCAL_SPOOL / "jobs").is_dir():
        return LOCAL_SPOOL
    raise NoSpool(
        f"no spool given: pass --spool DIR, or set {SPOOL_ENV} (in the environment, or in "
        f"{env_file()} for every user of this machine)"
    )
