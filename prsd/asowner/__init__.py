"""Work on a user's files done by a process that runs with the user's ids.

The rule (docs/security.md, "Privilege separation"): root never touches a user's
files. Reading a job's inputs, writing its outputs and removing them is done by a
process that runs with the job owner's uid, primary gid and supplementary groups and
no capabilities, so the kernel's permission checks decide what it may reach. The
daemons keep only the spool's control files. When the daemon already runs as the
job's owner (``prsd run`` as a user, a root-owned job under root daemons), no
separate process is needed and the same operations run in the daemon itself.
"""
