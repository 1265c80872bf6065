"""The agent: claiming, the worker pool, GPU slots, heartbeats, resource monitor."""
