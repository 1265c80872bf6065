"""What enters the worker, and only that: the ``hello`` frame, the channel's framing and
its one frame reader, the frames after ``hello``, the mini-batch and the outcome they
carry, the worker's board, and the log tree's names.

Standard library only and Python 3.7 syntax: the worker imports this package under
the job's own interpreter, as do the agent, the leader and the command line. The
spool's records (task files, result metadata, status, final, node reports,
heartbeats) are in :mod:`prsd.spool`.
"""
