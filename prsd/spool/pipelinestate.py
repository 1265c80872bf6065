"""``pipelines/<id>/state.json``: the leader's own record of a pipeline (skips, cancel).

Promise: :class:`PipelineState` is what the leader's pipeline desk decided and must
not decide twice: the steps it skipped (each with the reason shown to the user) and
whether the pipeline was canceled. It is written before anything else moves (so a
leader that takes over skips the same steps), read back as the daemons' own file,
and round-trips through :meth:`PipelineState.to_json` / :meth:`PipelineState.from_json`.
How a pipeline ended (``final.json``) is a :class:`prsd.spool.finalrecord.FinalState`, as a
job's, made by :func:`prsd.spool.endrecords.final_record`.

Errors: :meth:`PipelineState.from_json` raises :class:`prsd.spool.badrecord.BadRecord`
for anything but such a record (a version newer than ``SCHEMA`` included).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prsd.spool.badrecord import Doc, encode

__all__ = ["SCHEMA", "PipelineState"]

SCHEMA = 1


@dataclass(frozen=True)
class PipelineState:
    """The desk's decisions for one pipeline."""

    skipped: dict[str, str] = field(default_factory=dict)  # step -> why it was not run
    canceled: bool = False

    def skipping(self, more: dict[str, str]) -> PipelineState:
        """This record with ``more`` steps skipped (a step skipped before keeps its reason
        only if ``more`` does not name it)."""
        return PipelineState({**self.skipped, **more}, self.canceled)

    def to_json(self) -> bytes:
        return encode({"skipped": dict(self.skipped), "canceled": self.canceled}, SCHEMA)

    @classmethod
    def from_json(cls, data: bytes) -> PipelineState:
        """Read ``state.json``.

        Raises:
            BadRecord: not such a record.
        """
        doc = Doc(data, "pipelines/<id>/state.json", SCHEMA)
        skipped = doc.obj("skipped", default={})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in skipped.items()):
            raise doc.bad("skipped maps a step to something that is not a reason")
        return cls(dict(skipped), doc.flag("canceled", default=False))
