"""The code that runs inside a worker process (standard library only, Python 3.7+)."""
