"""What crosses a process or a file boundary: names and records shared by every side.

Standard library only and Python 3.7 syntax: the worker imports this package under
the job's own interpreter, as do the agent, the leader and the command line.
"""
