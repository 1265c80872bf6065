"""``--set`` paths into a pipeline checked against its steps before they are applied (pure).

Guarantees: ``jobs.<step>...`` must name a step the file has (with the nearest name
suggested); the keys below it are then checked by the step's own loader, whose
unknown-key errors name the key and suggest the nearest one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prsd.errors import JobSpecError
from prsd.jobspec.values import suggest

if TYPE_CHECKING:
    from collections.abc import Sequence

    from prsd.jobspec.overrides import Override


def check_overrides(data: Any, overrides: Sequence[Override]) -> None:
    """Refuse an override whose path names a step the pipeline does not have.

    Raises:
        JobSpecError: naming the override and the nearest step.
    """
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), dict):
        return
    steps = data["jobs"]
    for ov in overrides:
        if len(ov.path) >= 2 and ov.path[0] == "jobs" and ov.path[1] not in steps:
            hint = suggest(str(ov.path[1]), steps) or f" (steps: {', '.join(steps)})"
            raise JobSpecError(
                ov.text.split("=", 1)[0], "--set", f"the pipeline has no step {ov.path[1]!r}{hint}"
            )
