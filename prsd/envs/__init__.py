"""Per-job environments: built on each node from the job's conda file or requirements."""
