"""The leader: intake, splitting, requeue, accounting, finalisation."""
