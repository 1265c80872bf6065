"""What the v1 names stand on: config, the unsupported-call rule, pipeline YAML, runs."""
