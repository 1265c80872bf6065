"""The one rule for the v1 SDK outside prsd's surface: a ``NotImplementedError`` naming the call.

Guarantees: a public name a class or module does not define (``Workspace.create``,
``ds.as_mount``, ``azureml.core.ScriptRunConfig``) raises ``NotImplementedError`` saying
which call and pointing at docs/azure-sdk.md; private and dunder names keep Python's
``AttributeError``, so ``hasattr``, copying and pickling behave.
"""

from __future__ import annotations

from typing import Any, NoReturn

DOCS = "docs/azure-sdk.md"


def unsupported(call: str, why: str = "") -> NoReturn:
    """Raise the named error for ``call`` (``Workspace.create``)."""
    more = f" ({why})" if why else ""
    raise NotImplementedError(
        f"{call} is not supported by prsd's azureml v1 layer{more}; see {DOCS} "
        "for the supported calls"
    )


def _refuse(owner: str, name: str) -> NoReturn:
    if name.startswith("_"):
        raise AttributeError(f"{owner!r} has no attribute {name!r}")
    unsupported(f"{owner}.{name}")


class SurfaceMeta(type):
    """Class-level lookups of unknown public names (``Workspace.create``) are refused."""

    def __getattr__(cls, name: str) -> Any:
        _refuse(cls.__name__, name)


class Surface(metaclass=SurfaceMeta):
    """Instance-level lookups of unknown public names (``ds.as_mount``) are refused."""

    def __getattr__(self, name: str) -> Any:
        _refuse(type(self).__name__, name)


def module_getattr(module: str) -> Any:
    """A module ``__getattr__`` refusing names the module does not provide."""

    def __getattr__(name: str) -> Any:
        _refuse(module, name)

    return __getattr__
