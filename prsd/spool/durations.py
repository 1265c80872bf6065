"""Durations as Azure prints them (``h:mm:ss``), in the logs and in ``prsctl``'s views.

One format for both sides: the leader writes it into the progress overview and
``job_result.txt``; ``prsctl status`` shows elapsed time and ETA the same way, and a node report's
build time (:func:`prsd.spool.nodereport.environment_line`). Pure; never raises.
"""

from __future__ import annotations


def format_duration(seconds: float) -> str:
    """``h:mm:ss`` as Azure prints durations (a negative duration shows as 0:00:00)."""
    s = max(int(seconds), 0)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
