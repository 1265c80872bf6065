"""Marks this ``azureml.core`` as prsd's client-side v1 layer, not Azure's SDK.

A prsd worker exposes its own offline ``azureml.core`` (for entry scripts) unless the
job's environment has a real one; a folder holding this file does not count as real.
"""
