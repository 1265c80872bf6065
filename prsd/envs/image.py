"""What becomes of a job's ``image``: named once as not used, with the reason.

Invariant: pure; one line that names the image, why it is not used (no container
runtime on the node, or workers not yet run in containers by this prsd) and what the
workers run on instead. None when the job names no image.
"""

from __future__ import annotations

from typing import Any


def image_note(
    build_environment: dict[str, Any], runtime: str | None, key: str = "task.environment.image"
) -> str | None:
    """The note for the job's image (``key``: where the job's file names it), or None."""
    image = build_environment.get("image")
    if not image:
        return None
    why = (
        "no container runtime (podman or docker) configured on this node"
        if runtime is None
        else f"this prsd does not run workers in containers ({runtime} found)"
    )
    instead = (
        "the environment built from the job's file"
        if any(k in build_environment for k in ("conda_file", "requirements", "registered"))
        else "the agent's Python"
    )
    return f"{key} {image!r} is not used: {why}; the workers run on {instead}"
