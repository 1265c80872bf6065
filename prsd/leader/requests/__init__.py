"""The leader's request desk: users' requests (cancel, retry, remove), who may ask, and the removal of ended jobs."""
