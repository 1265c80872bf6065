"""The alternatives, each a module run as ``python -m bench.runners.NAME PLAN_JSON``."""
