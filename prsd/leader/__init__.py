"""The leader: the lease and the round over the jobs here; a job's lifecycle in the
subpackages intake, plan, run, end, takeover, rerun and requests (docs/architecture.md)."""
