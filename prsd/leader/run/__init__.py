"""A running job: its driver, its book and ledger, task files out and results in, requeues, verdicts, bisection, the merge and the job's logs and status."""
