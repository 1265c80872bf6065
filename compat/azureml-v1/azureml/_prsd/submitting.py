"""``Experiment.submit(pipeline)``: the pipeline file written, then handed to prsd.

Guarantees: the file (Azure's pipeline YAML, :mod:`.pipeline_yaml`) is written to a
new folder kept for the user (``.prsd-submissions/<experiment>-*`` beside
``config.json``, or in the temporary folder for a workspace made without one); it is
submitted as ``prsctl submit FILE.yml`` does (daemons serving the spool run it), or,
with ``"local": true`` in the ``prsd`` section, run by a background ``prsd run FILE.yml``
(a leader and an agent in one process, ending with the pipeline). A pipeline prsd
refuses raises ``ValueError`` with prsd's message and leaves nothing in the spool.
"""

from __future__ import annotations

import re
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from azureml._prsd.pipeline_yaml import draft
from prsd.azure.background import run_in_background

if TYPE_CHECKING:
    from azureml.core.experiment import Experiment
    from azureml.pipeline.core import Pipeline, PipelineRun

PIPELINE_FILE = "pipeline.yml"
SUBMISSIONS = ".prsd-submissions"


def submit_pipeline(experiment: Experiment, pipeline: Pipeline, params: dict[str, Any],
                    continue_on_step_failure: bool) -> PipelineRun:  # fmt: skip
    """Write and submit ``pipeline``; its run."""
    from azureml.pipeline.core import PipelineRun
    from prsd.spool.opening import open_spool

    ws = experiment.workspace
    settings = ws._settings
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", experiment.name) or "pipeline"
    d = draft(experiment.name, pipeline.steps, params, settings.python, continue_on_step_failure)
    config = Path(settings.source)
    parent = config.parent / SUBMISSIONS if config.is_file() else None
    if parent is not None:
        parent.mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=parent))
    file = folder / PIPELINE_FILE
    file.write_text(yaml.safe_dump(d.data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    spool = open_spool(settings.spool, create=True)
    datastore = ws.get_default_datastore().name
    if settings.local:
        run_id, proc = run_in_background(file, spool.root, experiment.name, folder)
        return PipelineRun(experiment, run_id, d, spool.root, file, datastore, proc)
    from prsd.errors import PrsdError
    from prsd.pipesubmit import submit_pipeline as stage

    try:
        record = stage(file, spool, name=experiment.name)
    except PrsdError as exc:
        raise ValueError(f"prsd refused the pipeline ({file}): {exc}") from None
    _warn_if_unserved(spool)
    return PipelineRun(experiment, record.pipeline_id, d, spool.root, file, datastore)


def _warn_if_unserved(spool: Any) -> None:
    from prsd.read.fleet import fleet_warning, read_fleet

    warning = fleet_warning(read_fleet(spool, datetime.now(UTC)), "queued")
    if warning is not None:
        sys.stderr.write(f"warning: {warning}\n")
