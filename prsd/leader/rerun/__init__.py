"""Retry jobs (``prsctl retry``): what runs again, what an earlier job's results keep, and the retry's combined output."""
