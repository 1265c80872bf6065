"""Azure ML SDK v2 jobs (``azure-ai-ml``) submitted to a prsd spool: ``MLClient(spool=...)``.

The one changed line of a v2 notebook is the client's construction::

    from prsd.azure import MLClient
    ml_client = MLClient(spool="/shared/prsd")      # was MLClient(credential, sub, rg, ws)
    job = ml_client.jobs.create_or_update(pipeline_job, experiment_name="x")
    ml_client.jobs.stream(job.name)
    ml_client.jobs.download(job.name, output_name="scores", download_path=".")

Jobs are the SDK's own objects, written with the SDK's own serialiser (see
:mod:`prsd.azure.jobs`). Needs the ``azure`` extra (``pip install '/path/to/prsd[azure]'``).
"""

from __future__ import annotations

from prsd.azure.client import MLClient

__all__ = ["MLClient"]
