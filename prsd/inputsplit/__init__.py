"""How a job's input splits into mini-batches: the planner, the file splitter and the table cutters (reading only, no spool writes; the leader and ``prsctl retry`` both use it)."""
