"""Taking a job in: the inbox, the seal, the spec (loaded as its owner), the job's first files."""
