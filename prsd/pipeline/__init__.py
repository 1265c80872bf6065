"""Pipeline jobs: several command and parallel steps run in dependency order.

A pipeline file (Azure's ``type: pipeline``) is read and checked whole at submit
(:mod:`prsd.pipeline.steps`, :mod:`prsd.pipeline.graph`); each step becomes an ordinary
job folder staged in ``pipelines/<id>/steps/<step>/`` (:mod:`prsd.pipeline.stage`); the
leader's pipeline desk (:mod:`prsd.pipeline.desk`) moves a step into ``inbox/`` once
the steps it reads from have completed, so every step is claimed, run, retried and
taken over as any job is. docs/pipelines.md is the user's view.
"""
