"""Azure's runtime package for entry scripts, as prsd provides it.

Migrated scripts keep ``from azureml_user.parallel_run import EntryScript``.
Standard library only, Python 3.7 syntax: this runs under the job's interpreter.
"""
