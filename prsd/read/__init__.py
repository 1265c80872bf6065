"""The supported read API of a spool: what clients may know about jobs, pipelines, nodes.

``prsctl``, ``prsd run``, ``prsd.azure`` and the ``azureml`` compatibility package
read the spool only through these modules, never by joining its paths or parsing its
files themselves:

- :mod:`prsd.read.jobs`: :func:`~prsd.read.jobs.read_job_status` (one job's status
  document), :func:`~prsd.read.jobs.job_ids` and
  :func:`~prsd.read.jobs.read_job_statuses` (every job), :func:`~prsd.read.jobs.resolve_job`.
- :mod:`prsd.read.pipelines`: :func:`~prsd.read.pipelines.read_pipeline_status`.
- :mod:`prsd.read.fleet`: :func:`~prsd.read.fleet.read_fleet` (is a leader and an agent
  alive?) and :func:`~prsd.read.fleet.fleet_warning`.
- :mod:`prsd.read.nodes`: the agents' heartbeats as rows.

Every reader is read-only and works on a spool this user may only read. What it cannot
read it reports in the document (``Unknown``, ``Starting``), never by raising, unless
the function says otherwise.
"""
