"""The job spec: ``job.yaml`` (Azure v2 names, v1 aliases) normalised once into a frozen JobSpec.

No other module sees an alias, a raw YAML mapping or an Azure ``${{...}}`` reference.
"""

from prsd.jobspec.load import find_job_file, load_job_spec
from prsd.jobspec.model import InputSpec, JobSpec

__all__ = ["InputSpec", "JobSpec", "find_job_file", "load_job_spec"]
