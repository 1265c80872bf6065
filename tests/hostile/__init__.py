"""Hostile job folders: each one must fail with a clear error and harm nothing."""
