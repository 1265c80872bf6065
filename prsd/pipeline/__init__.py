"""Pipeline jobs as the leader drives them: several command and parallel steps in order.

A pipeline file (Azure's ``type: pipeline``) is read and checked whole at submit
(:mod:`prsd.jobspec.steps`, :mod:`prsd.jobspec.stepjob`); each step becomes an ordinary
job folder staged in ``pipelines/<id>/steps/<step>/`` (:mod:`prsd.pipesubmit`); the
leader's pipeline desk (:mod:`prsd.pipeline.desk`) moves a step into ``inbox/`` once
the steps it reads from have completed, so every step is claimed, run, retried and
taken over as any job is. This package is the leader's side only (the steps' views,
the desk); the pipeline's folder and its records are prsd/spool/pipelinefolder.py;
docs/pipelines.md is the user's view.
"""
