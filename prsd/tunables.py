"""Operator settings read from ``PRSD_*`` environment variables, resolved here only.

These are Azure's fixed constants of the init rules (SPEC section 4). Production
keeps the defaults; a development machine or a test may shorten them so that a
broken ``init()`` fails the job in seconds rather than minutes. A value that is
not a number >= 0 is ignored (the default applies).

- ``PRSD_INIT_RULE_WINDOW_S`` (default 120): the job-wide rule "after 2 minutes,
  ``2 * nodes * max_concurrency_per_instance`` init failures and no success".
- ``PRSD_INIT_GRACE_S`` (default 30): the ``+ 30`` of "a worker still in
  ``init()`` after ``3 * timeout + 30`` seconds".
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

INIT_RULE_WINDOW_S = 120.0
INIT_GRACE_S = 30.0


def _seconds(name: str, default: float, environ: Mapping[str, str] | None) -> float:
    text = (os.environ if environ is None else environ).get(name, "").strip()
    try:
        value = float(text) if text else default
    except ValueError:
        return default
    return value if value >= 0 else default


def init_rule_window_s(environ: Mapping[str, str] | None = None) -> float:
    """Seconds after the job's start before the init-failure count can fail it."""
    return _seconds("PRSD_INIT_RULE_WINDOW_S", INIT_RULE_WINDOW_S, environ)


def init_grace_s(environ: Mapping[str, str] | None = None) -> float:
    """The fixed part of the init deadline ``3 * timeout + grace``."""
    return _seconds("PRSD_INIT_GRACE_S", INIT_GRACE_S, environ)
