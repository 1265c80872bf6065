"""The paths of one pipeline's folder in the spool (``pipelines/<id>/``), by name.

Part of the spool's layout (:mod:`prsd.spool.layout`, which hands these out through
``SpoolLayout.pipeline``): the names of a pipeline's files are spelled here and only
here. The folder belongs to its submitter; the leader writes ``state.json``,
``final.json`` and ``logs/`` in it through descriptors (prsd/spool/pipelinefolder.py). Pure:
nothing here touches the file system.

Layout (docs/pipelines.md)::

    pipelines/<id>/pipeline.json    what the submitter wrote (prsd.spool.pipelinerecord)
    pipelines/<id>/state.json       the leader's view of the steps while it runs
    pipelines/<id>/final.json       the pipeline's end, written last
    pipelines/<id>/cancel           the submitter asks for a cancel
    pipelines/<id>/steps/<step>/    step job folders not yet moved to the inbox
    pipelines/<id>/logs/            the pipeline's job_result.txt
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.wire.logtree import LogTree

if TYPE_CHECKING:
    from pathlib import Path

PIPELINE_RECORD = "pipeline.json"
PIPELINE_STATE = "state.json"
PIPELINE_FINAL = "final.json"
PIPELINE_CANCEL = "cancel"

PIPELINE_STEPS = "steps"


@dataclass(frozen=True)
class PipelineLayout:
    """Paths of one pipeline folder (``pipelines/<id>/``), which its submitter owns."""

    root: Path
    pipeline_id: str

    @property
    def record(self) -> Path:
        """``pipeline.json``: what the submitter wrote (prsd.spool.pipelinerecord)."""
        return self.root / PIPELINE_RECORD

    @property
    def state(self) -> Path:
        """``state.json``: the leader's view of the steps while the pipeline runs."""
        return self.root / PIPELINE_STATE

    @property
    def final(self) -> Path:
        """``final.json``: the pipeline's end, written last."""
        return self.root / PIPELINE_FINAL

    @property
    def steps(self) -> Path:
        """``steps/``: the step job folders not yet moved to the inbox."""
        return self.root / PIPELINE_STEPS

    @property
    def cancel(self) -> Path:
        """``cancel``: the submitter asks the leader to cancel the pipeline."""
        return self.root / PIPELINE_CANCEL

    def step(self, name: str) -> Path:
        return self.steps / name

    @property
    def log_tree(self) -> LogTree:
        """The pipeline's ``logs/`` (its ``job_result.txt``)."""
        return LogTree.of_job(self.root)
