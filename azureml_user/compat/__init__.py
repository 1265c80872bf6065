"""Azure ML SDK v1 names for entry scripts, offline (``azureml.core``): see docs/azureml-core.md.

This folder is not on any ``sys.path``: a worker's import finder exposes its
``azureml`` package only when the job's own environment has no ``azureml.core``.
"""
