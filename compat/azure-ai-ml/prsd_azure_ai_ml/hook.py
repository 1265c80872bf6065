"""The import hook: ``azure.ai.ml.MLClient`` is prsd's; ``azure.identity`` has stand-ins
where the real package is not installed.

Invariant: :func:`install` adds one finder to ``sys.meta_path`` (once, however often
it is called) and imports nothing else. Loading this module imports ``sys`` alone: its
``.pth`` file loads it at every start of every interpreter of the environment (a
notebook's kernel, pip, each spawned worker), so the rest
(:mod:`prsd_azure_ai_ml.loaders`) waits for the two names. The finder answers for two
names only. For ``azure.ai.ml`` it returns the real package's spec with a loader that
runs the real module, then sets its ``MLClient`` to
:class:`prsd_azure_ai_ml.client.MLClient`; the SDK's submodules
(``azure.ai.ml._ml_client`` included) are untouched. For ``azure.identity`` it steps
aside when the real package can be found, else returns the stand-in module
:mod:`prsd_azure_ai_ml.identity` under that name.

Errors: importing ``azure.ai.ml`` raises ImportError, naming what to install, when
prsd cannot be imported in this environment (the real SDK's module is then not left
half-patched: the import fails whole, as Python's import system does).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing itself is not imported: this module loads at every start
if TYPE_CHECKING:
    import importlib.machinery
    from collections.abc import Sequence
    from types import ModuleType

CLIENT_PACKAGE = "azure.ai.ml"
IDENTITY_PACKAGE = "azure.identity"


class Finder:
    """The finder :func:`install` puts on ``sys.meta_path`` (see the module doc)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in (CLIENT_PACKAGE, IDENTITY_PACKAGE):
            return None
        # Only now: this module loads at every interpreter start.
        from prsd_azure_ai_ml.loaders import PatchingLoader, StandInLoader

        real = _real_spec(self, fullname, path, target)
        if fullname == IDENTITY_PACKAGE:
            if real is not None:
                return None  # Azure's own azure-identity
            import importlib.util

            return importlib.util.spec_from_loader(fullname, StandInLoader())
        if real is None or real.loader is None:
            return None
        real.loader = PatchingLoader(real.loader)
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
