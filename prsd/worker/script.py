"""Importing the user's entry script and calling its ``init`` / ``run`` / ``shutdown``.

``entry_script`` is a file path relative to the code folder (``score.py``,
``src/score.py``) or a dotted module name (``batch_score.main``), as in Azure. A file
is imported under the dotted name of its path (``src/score.py`` -> ``src.score``, as
Azure's old driver did), registered in ``sys.modules`` so pickling (multiprocessing,
DataLoader workers) and dataclasses work; ``__file__`` is its path in the code folder.
The code folder is first on ``sys.path``, then the script's own folder when it is
another one, so ``import helper`` next to ``src/score.py`` works.

Standard library only, Python 3.7 syntax.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from typing import TYPE_CHECKING, Any

from prsd.worker.loaders import MiniBatchContext

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

    from prsd.worker.loaders import MiniBatchRef


class EntryScriptError(Exception):
    """The entry script cannot be used as one (no ``run()``, a clashing name, not valid
    Python)."""


class Profiler:
    """The small part of ``cProfile.Profile`` / ``profile.Profile`` the worker uses."""

    def __init__(self, module_name: str) -> None:
        module = importlib.import_module(module_name)
        self._profile = module.Profile()

    def runcall(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self._profile.runcall(fn, *args)

    def dump(self, path: str) -> None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self._profile.dump_stats(path)


def is_file_path(entry_script: str) -> bool:
    """True for ``score.py`` / ``src/score.py``; False for ``pkg.module``."""
    return entry_script.endswith(".py") or "/" in entry_script or os.sep in entry_script


def script_file(code_dir: str, entry_script: str) -> str:
    """The entry script's file (``sys.argv[0]``), or the module name if not found."""
    if is_file_path(entry_script):
        return os.path.normpath(os.path.join(code_dir, entry_script))
    base = os.path.join(code_dir, *entry_script.split("."))
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return entry_script


def module_name_for(code_dir: str, path: str) -> str:
    """``<code_dir>/src/score.py`` -> ``src.score``; the stem when that is no valid name."""
    relative = os.path.relpath(path, code_dir)
    parts = os.path.splitext(relative)[0].split(os.sep)
    if all(part.isidentifier() for part in parts):
        return ".".join(parts)
    return os.path.splitext(os.path.basename(path))[0]


def prepare_sys_path(code_dir: str, entry_script: str) -> None:
    """Code folder first on ``sys.path``; the script's folder next when it differs."""
    folders = [code_dir]
    if is_file_path(entry_script):
        own = os.path.dirname(script_file(code_dir, entry_script))
        if os.path.normpath(own) != os.path.normpath(code_dir):
            folders.append(own)
    for folder in folders:
        while folder in sys.path:
            sys.path.remove(folder)
    sys.path[:0] = folders


def import_entry_script(code_dir: str, entry_script: str) -> ModuleType:
    """Import the entry script (its top-level code runs now).

    Raises:
        EntryScriptError: its module name clashes with a module already loaded, or it
            (or a module it imports) is not valid Python: a SyntaxError at import, said
            so with the file and line.
        FileNotFoundError: the script file does not exist.
        Exception: whatever the script's top-level code raises.
    """
    try:
        return _import(code_dir, entry_script)
    except SyntaxError as exc:  # IndentationError and TabError too
        where = f"{exc.filename}, line {exc.lineno}" if exc.filename else f"line {exc.lineno}"
        raise EntryScriptError(
            f"{type(exc).__name__} at import of the entry script: {exc.msg} ({where})"
        ) from exc


def _import(code_dir: str, entry_script: str) -> ModuleType:
    if not is_file_path(entry_script):
        return importlib.import_module(entry_script)
    path = script_file(code_dir, entry_script)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"entry script {path} does not exist")
    name = module_name_for(code_dir, path)
    if name in sys.modules:
        raise EntryScriptError(
            f"entry script {entry_script} would be imported as {name!r}, which names a "
            "module that is already loaded; rename the script"
        )
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise EntryScriptError(f"entry script {path} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def positional_parameters(fn: Callable[..., Any]) -> int:
    """How many named positional parameters ``fn`` declares (1 when unknown)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in parameters if p.kind in kinds)


class UserScript:
    """The imported entry script: its three functions, called (and maybe profiled)."""

    def __init__(self, module: ModuleType, profiler: Profiler | None = None) -> None:
        """Wrap an imported entry script.

        Raises:
            EntryScriptError: it defines no ``run()``.
        """
        run = getattr(module, "run", None)
        if not callable(run):
            raise EntryScriptError(
                f"entry script {getattr(module, '__file__', module.__name__)} "
                "defines no run(mini_batch) function"
            )
        self.module = module
        self.profiler = profiler
        self._run = run
        # Azure passes mini_batch_context to a run() that takes a second parameter.
        self.takes_context = positional_parameters(run) >= 2

    def init(self) -> None:
        """Call ``init()`` if the script defines it."""
        self._call_optional("init")

    def run(self, mini_batch: Any, ref: MiniBatchRef) -> Any:
        """Call ``run(mini_batch)`` or ``run(mini_batch, mini_batch_context)``."""
        if self.takes_context:
            return self.call(self._run, mini_batch, MiniBatchContext(ref))
        return self.call(self._run, mini_batch)

    def shutdown(self) -> None:
        """Call ``shutdown()`` if the script defines it."""
        self._call_optional("shutdown")

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call a user function, under the profiler when profiling is on."""
        if self.profiler is not None:
            return self.profiler.runcall(fn, *args)
        return fn(*args)

    def _call_optional(self, name: str) -> None:
        fn = getattr(self.module, name, None)
        if callable(fn):
            self.call(fn)
