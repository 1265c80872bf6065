"""The spool ``prsctl`` works on: ``--spool``, the environment, then the daemons' ``prsd.env``.

A user's shell rarely exports ``PRSD_SPOOL``; the administrator already wrote it in
``/etc/prsd/prsd.env`` (readable by everyone, docs/deploy.md), so ``prsctl`` reads the
same file (through :mod:`prsd.settings`, the one reader) and every user finds the spool
the daemons use.

Errors: :class:`NoSpool` when no spool is given anywhere (``prsctl submit`` never
invents one: a job dropped into a folder no leader serves waits forever).
"""

from __future__ import annotations

from pathlib import Path

from prsd.errors import PrsdError
from prsd.settings import env_file, setting
from prsd.spool.layout import SpoolLayout

SPOOL_ENV = "PRSD_SPOOL"
LOCAL_SPOOL = Path("spool")  # where `prsd run` puts its spool by default


class NoSpool(PrsdError):
    """No ``--spool``, no ``PRSD_SPOOL`` in the environment or the settings file."""


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
    if not for_submit and SpoolLayout(LOCAL_SPOOL).jobs.is_dir():
        return LOCAL_SPOOL
    raise NoSpool(
        f"no spool given: pass --spool DIR, or set {SPOOL_ENV} (in the environment, or in "
        f"{env_file()} for every user of this machine)"
    )
