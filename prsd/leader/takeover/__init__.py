"""A new leader taking over a job: what its task folders say, the names its predecessor issued, the tasks adopted."""
