"""The two loaders of :mod:`prsd_azure_ai_ml.hook`, imported when one of its two names is.

:class:`PatchingLoader` runs the real ``azure.ai.ml`` module, then sets its ``MLClient``
to prsd's; :class:`StandInLoader` gives :mod:`prsd_azure_ai_ml.identity` as
``azure.identity``. Kept apart from the hook, which loads at every interpreter start
and must stay cheap (``importlib.abc`` alone imports ``importlib.resources`` and
``tempfile``).

Errors: as the hook's (an ``azure.ai.ml`` whose prsd cannot be imported).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import ModuleType


class PatchingLoader(importlib.abc.Loader):
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


class StandInLoader(importlib.abc.Loader):
    """``azure.identity`` as :mod:`prsd_azure_ai_ml.identity` (same objects)."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return importlib.import_module("prsd_azure_ai_ml.identity")

    def exec_module(self, module: ModuleType) -> None:
        return None  # already executed under its own name
