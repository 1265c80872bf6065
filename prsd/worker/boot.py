"""A worker's first code: ``PYTHON /abs/path/prsd/worker/boot.py --fd N [--parent-pid P]``.

Run by path under any interpreter of Python 3.7 or later (the job's venv, which may
have other library versions and no prsd installed), so it imports nothing but the
standard library until it has made prsd importable:

- its own folder leaves ``sys.path``, so ``protocol``, ``host`` and friends never become
  top-level modules the user's script could import by accident;
- a meta-path finder makes exactly the top-level packages ``prsd`` and ``azureml_user``
  importable from the folder that holds this installation. Nothing else from that
  folder becomes visible: it may be the agent's site-packages, whose libraries must
  not shadow the job's own;
- ``azureml`` comes from prsd's offline ``azureml.core`` (``azureml_user/compat``) only
  when the job's environment has no ``azureml/core`` of its own: a real azureml-core
  is never shadowed, and prsd's client-side v1 layer (``compat/azureml-v1``, marked by
  ``_prsd_client.py``) is no real one;
- with ``--fork-server --fd N`` it runs :mod:`prsd.worker.forkserver` instead of one
  worker (the same isolation, then workers forked on request);
- on Linux, the worker asks for SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), so
  workers never outlive their agent; if the parent is already gone it exits at once.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

EXPOSED_PACKAGES = ("prsd", "azureml_user")
EXIT_AGENT_GONE = 71  # same value as prsd.wire.protocol.EXIT_AGENT_GONE
_PR_SET_PDEATHSIG = 1


class InstallationFinder:
    """Finds only the named top-level packages, and only in one folder."""

    def __init__(self, root: str, names: Sequence[str]) -> None:
        self.root = root
        self.names = frozenset(names)

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        """Locate ``prsd`` / ``azureml_user`` in the installation; decline anything else."""
        if fullname == "azureml":
            if _has_azureml_core(sys.path):
                return None  # the job's own azureml-core
            root = os.path.join(self.root, *COMPAT)
        elif fullname in self.names:
            root = self.root
        else:
            return None  # before any import here: importing would come back to this finder
        from importlib.machinery import PathFinder

        return PathFinder.find_spec(fullname, [root])


COMPAT = ("azureml_user", "compat")  # holds the offline ``azureml`` package
CLIENT_MARKER = "_prsd_client.py"  # in prsd's client-side ``azureml.core`` (compat/azureml-v1)


def _has_azureml_core(path: Sequence[str]) -> bool:
    """Does the job's own environment provide ``azureml.core`` (the real SDK)?"""
    for p in path:
        core = os.path.join(p or ".", "azureml", "core")
        if os.path.isdir(core) and not os.path.exists(os.path.join(core, CLIENT_MARKER)):
            return True
    return False


def installation_root() -> str:
    """The folder that contains this ``prsd`` package (site-packages or a checkout)."""
    return os.path.dirname(os.path.dirname(_own_folder()))


def _own_folder() -> str:
    return os.path.dirname(os.path.realpath(__file__))


def isolate_imports() -> None:
    """Drop this file's folder from ``sys.path``; expose prsd and azureml_user only."""
    own = _own_folder()
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != own]
    sys.meta_path.insert(0, InstallationFinder(installation_root(), EXPOSED_PACKAGES))


def die_with_parent(parent_pid: int | None) -> None:
    """Ask Linux for SIGKILL when the parent exits; exit now if it already has."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass  # no prctl (unusual libc): the agent's process-group kill still works
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(EXIT_AGENT_GONE)


def _parent_pid(argv: Sequence[str]) -> int | None:
    for i, arg in enumerate(argv[:-1]):
        if arg == "--parent-pid":
            return int(argv[i + 1])
    return None


def main() -> None:
    """Boot the worker host, or with ``--fork-server`` the fork server (never returns)."""
    isolate_imports()
    die_with_parent(_parent_pid(sys.argv[1:]))
    if sys.argv[1:2] == ["--fork-server"]:
        from prsd.worker.forkserver import serve

        sys.exit(serve(int(sys.argv[3]), die_with_parent))
    from prsd.worker.host import main as host_main

    sys.exit(host_main(sys.argv[1:]))


if __name__ == "__main__":
    main()
