"""The spool protocol: layout, atomic writes, task and result files, claims, leases.

Nothing in this package imports from ``prsd.leader``, ``prsd.agent`` or ``prsd.cli``.
"""
