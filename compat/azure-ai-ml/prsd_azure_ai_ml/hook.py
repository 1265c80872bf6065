"""The import hook: ``azure.ai.ml.MLClient`` is prsd's; ``azure.identity`` has stand-ins
where the real package is not installed.

Invariant: :func:`install` adds one finder to ``sys.meta_path`` (once, however often
it is called) and imports nothing else. The finder answers for two names only. For
``azure.ai.ml`` it returns the real package's spec with a loader that runs the real
module, then sets its ``MLClient`` to :class:`prsd_azure_ai_ml.client.MLClient`; the
SDK's submodules (``azure.ai.ml._ml_client`` included) are untouched. For
``azure.identity`` it steps aside when the real package can be found, else returns
the stand-in module :mod:`prsd_azure_ai_ml.identity` under that name.

Errors: importing ``azure.ai.ml`` raises ImportError, naming what to install, when
prsd cannot be imported in this environment (the real SDK's module is then not left
half-patched: the import fails whole, as Python's import system does).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType

CLIENT_PACKAGE = "azure.ai.ml"
IDENTITY_PACKAGE = "azure.identity"


class _PatchingLoader(importlib.abc.Loader):
    """The real ``azure.ai.ml`` loader, then prsd's ``MLClient`` in the module."""

    def __init__(self, real: importlib.abc.Loader) -> None:
        self.real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.real.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.real.exec_module(module)
        try:
            from prsd_azure_ai_ml.client import MLClient
        except ImportError as exc:
            raise ImportError(
                f"prsd-azure-ai-ml maps azure.ai.ml.MLClient onto prsd, which cannot be "
                f"imported here ({exc}); install prsd in this environment "
                "(pip install '/path/to/prsd[azure]'), or uninstall prsd-azure-ai-ml"
            ) from exc
        module.MLClient = MLClient  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> Any:
        # is_package, get_code, get_resource_reader ...: the real loader's
        return getattr(self.real, name)


class _StandInLoader(importlib.abc.Loader):
    """``azure.identity`` as :mod:`prsd_azure_ai_ml.identity` (same objects)."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return importlib.import_module("prsd_azure_ai_ml.identity")

    def exec_module(self, module: ModuleType) -> None:
        return None  # already executed under its own name


class Finder(importlib.abc.MetaPathFinder):
    """The finder :func:`install` puts on ``sys.meta_path`` (see the module doc)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in (CLIENT_PACKAGE, IDENTITY_PACKAGE):
            return None
        real = _real_spec(self, fullname, path, target)
        if fullname == IDENTITY_PACKAGE:
            if real is not None:
                return None  # Azure's own azure-identity
            return importlib.util.spec_from_loader(fullname, _StandInLoader())
        if real is None or real.loader is None:
            return None
        real.loader = _PatchingLoader(real.loader)
        return real


def _real_spec(
    me: Finder, fullname: str, path: Sequence[str] | None, target: ModuleType | None
) -> importlib.machinery.ModuleSpec | None:
    for finder in sys.meta_path:
        if finder is me or isinstance(finder, Finder):
            continue
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        spec: importlib.machinery.ModuleSpec | None = find(fullname, path, target)
        if spec is not None:
            return spec
    return None


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, Finder())
