"""Job ids: a job name turned into a safe, unique, sortable folder name."""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime

_UNSAFE = re.compile(r"[^a-z0-9_-]+")
MAX_NAME_CHARS = 60


def sanitize_name(name: str) -> str:
    """Lower-case letters, digits, ``_`` and ``-`` only; never empty."""
    cleaned = _UNSAFE.sub("-", name.lower()).strip("-_")
    return cleaned[:MAX_NAME_CHARS].strip("-_") or "job"


def make_job_id(name: str, when: datetime | None = None) -> str:
    """``<sanitized-name>-<YYYYMMDD>-<HHMMSS>-<4 hex>``: unique, and sorted by start time per name."""
    when = when or datetime.now(UTC)
    return f"{sanitize_name(name)}-{when:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
