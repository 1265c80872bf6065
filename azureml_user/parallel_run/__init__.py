"""``from azureml_user.parallel_run import EntryScript`` gives prsd's ``EntryScript``."""

from prsd.worker.entry_script import EntryScript

__all__ = ["EntryScript"]
