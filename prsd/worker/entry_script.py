"""Placeholder: EntryScript (replaced by the worker host implementation)."""


class EntryScript:
    pass
