"""Ending a job: the output published or kept in part, the result and error texts, the private records, and the job boundary that turns a fault into an end."""
