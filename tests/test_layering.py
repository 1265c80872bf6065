"""The package's layering, checked from the import statements of every module.

- :data:`ALLOWED` is an allow-list: for each package (``prsd.leader``, ``prsd.spool``,
  a top-level module such as ``prsd.errors``) the packages it may import, relative
  imports and imports under ``TYPE_CHECKING`` included. Anything else fails. The list
  is itself a layering (no package reaches itself through it).
- No module of prsd or azureml_user imports itself back through other modules (no
  import circle).
- ``prsd.worker``, ``prsd/__init__`` and ``azureml_user`` import only the standard
  library and ``prsd.worker`` at module level (they run under the job's own
  interpreter); inside a function they may also import pandas, pyarrow and numpy
  (loading a tabular mini-batch, which needs them from the job's environment).
- Only ``daemon``, ``runhere`` (with ``embedded``, ``pipelinerun`` and ``runcmd``, which
  use it) and the cli wire leader and agent together.
  The clients (``prsd.cli``, ``prsd.submit``, ``prsd.pipesubmit``, ``prsd.azure``) do
  not import the leader: they read the spool through :mod:`prsd.read` and check a job
  with what the leader shares below it (prsd.jobspec, prsd.spool, and for
  ``prsctl retry`` the retry planning of prsd.retryplan).
- ``compat/azureml-v1`` (the ``azureml`` package, module names ``azureml.*``) is a
  client too: it may import prsd.azure, the read API, the storage layer's paths and
  ``open_spool``, prsd.errors, prsd.envs (the Azure-only package list) and
  prsd.pipesubmit (submitting a pipeline), nothing else of prsd.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_BASE = {"prsd.errors", "prsd.fdio", "prsd.logline", "prsd.wire"}  # used by every layer
# package -> the packages it may import (besides itself). Bottom first.
ALLOWED: dict[str, set[str]] = {
    "prsd.fdio": set(),  # stdlib only, Python 3.7: workers use it too
    "prsd.wire": set(),  # stdlib only, Python 3.7: what enters the worker (frames, records)
    "prsd.worker": {"prsd.fdio", "prsd.wire"},  # the job's interpreter: stdlib only
    "azureml_user": {"prsd.worker", "prsd.wire"},
    "prsd": {"prsd.worker"},  # prsd/__init__.py, imported by workers
    "prsd.logline": {"prsd.fdio"},
    "prsd.errors": {"prsd.logline"},
    "prsd.tunables": set(),
    "prsd.settings": set(),  # the one reader of the daemons' settings file
    "prsd.sdnotify": set(),
    "prsd.logconfig": set(),
    "prsd.spool": {*_BASE},
    "prsd.report": {"prsd.spool", "prsd.wire"},
    "prsd.owner": {*_BASE, "prsd.spool"},
    "prsd.asowner": {*_BASE, "prsd.owner", "prsd.spool"},  # work done with a job owner's ids
    "prsd.envs": {*_BASE, "prsd.owner", "prsd.spool"},
    "prsd.pipeline": {*_BASE, "prsd.logconfig", "prsd.spool"},  # the leader's pipeline desk
    "prsd.jobspec": {*_BASE, "prsd.envs", "prsd.pipeline", "prsd.settings", "prsd.spool"},
    "prsd.read": {*_BASE, "prsd.pipeline", "prsd.spool"},  # the supported read API
    # a job's input into mini-batches: the planner, read-only (leader and prsctl retry)
    "prsd.inputsplit": {*_BASE, "prsd.jobspec", "prsd.spool"},
    # a retry's planning, run by the leader and dry-run by prsctl retry
    "prsd.retryplan": {*_BASE, "prsd.inputsplit", "prsd.jobspec", "prsd.spool"},
    "prsd.leader": {
        *_BASE,
        "prsd.asowner",
        "prsd.inputsplit",
        "prsd.jobspec",
        "prsd.logconfig",
        "prsd.owner",
        "prsd.pipeline",
        "prsd.retryplan",
        "prsd.spool",
        "prsd.tunables",
    },
    "prsd.agent": {
        *_BASE,
        "prsd.envs",
        "prsd.jobspec",
        "prsd.logconfig",
        "prsd.owner",
        "prsd.spool",
        "prsd.tunables",
        "prsd.worker",
    },
    "prsd.submit": {*_BASE, "prsd.jobspec", "prsd.retryplan", "prsd.spool"},
    "prsd.pipesubmit": {*_BASE, "prsd.jobspec", "prsd.pipeline", "prsd.spool", "prsd.submit"},
    "prsd.cli": {
        *_BASE,
        "prsd.asowner",
        "prsd.envs",
        "prsd.jobspec",
        "prsd.pipeline",
        "prsd.pipesubmit",
        "prsd.read",
        "prsd.report",
        "prsd.settings",
        "prsd.spool",
        "prsd.submit",
    },
    "prsd.doctor": {*_BASE, "prsd.cli", "prsd.spool"},
    # Azure SDK v2 jobs submitted as pipelines (docs/azure-sdk.md)
    "prsd.azure": {
        *_BASE,
        "prsd.jobspec",
        "prsd.pipeline",
        "prsd.pipesubmit",
        "prsd.read",
        "prsd.spool",
    },
    # compat/azureml-v1: Azure's v1 SDK names over prsd (docs/azureml-core.md)
    "azureml": {
        "prsd.azure",
        "prsd.envs",
        "prsd.errors",
        "prsd.pipesubmit",
        "prsd.read",
        "prsd.spool",  # only its paths and open_spool: COMPAT_STORAGE
    },
    "prsd.cmdline": {*_BASE, "prsd.spool"},  # prsd's parser and defaults: no doctor check
    "prsd.ctrlc": set(),  # the user's Ctrl-C during prsd run (stdlib and anyio)
    # prsd run of a job handed to the daemons: followed, no leader or agent loaded
    "prsd.follow": {*_BASE, "prsd.ctrlc", "prsd.read", "prsd.spool"},
    # prsd run: a leader and an agent in this process until a job or a pipeline ends
    "prsd.runhere": {*_BASE, "prsd.agent", "prsd.ctrlc", "prsd.leader", "prsd.spool"},
    "prsd.embedded": {  # prsd run of a job: run_here (follow re-exported)
        *_BASE,
        "prsd.agent",
        "prsd.cli",
        "prsd.ctrlc",
        "prsd.follow",
        "prsd.leader",
        "prsd.logconfig",
        "prsd.read",
        "prsd.runhere",
        "prsd.spool",
    },
    "prsd.pipelinerun": {  # prsd run of a pipeline: run_here
        *_BASE,
        "prsd.agent",
        "prsd.cli",
        "prsd.ctrlc",
        "prsd.jobspec",
        "prsd.leader",
        "prsd.pipeline",
        "prsd.read",
        "prsd.runhere",
        "prsd.spool",
    },
    "prsd.runcmd": {  # the prsd run command: submit, then a job or a pipeline here
        *_BASE,
        "prsd.agent",
        "prsd.cli",
        "prsd.cmdline",
        "prsd.ctrlc",
        "prsd.embedded",
        "prsd.follow",
        "prsd.jobspec",  # pipefile: is the submission a pipeline (its code loaded only then)
        "prsd.leader",
        "prsd.logconfig",
        "prsd.pipelinerun",
        "prsd.read",
        "prsd.runhere",
        "prsd.spool",
        "prsd.submit",
    },
    "prsd.daemon": {
        *_BASE,
        "prsd.agent",
        "prsd.cli",
        "prsd.cmdline",
        "prsd.doctor",
        "prsd.leader",
        "prsd.logconfig",
        "prsd.pipelinerun",
        "prsd.read",
        "prsd.runcmd",
        "prsd.sdnotify",
        "prsd.spool",
    },
}
COMPAT = ROOT / "compat" / "azureml-v1"
COMPAT_STORAGE = {"prsd.spool.layout", "prsd.spool.opening"}
WORKER_SIDE = ("prsd.worker", "prsd.fdio", "prsd.wire", "azureml_user")
LAZY_ALLOWED = {"pandas", "pyarrow", "numpy"}  # worker side, inside functions only


def _module_name(path: Path) -> str:
    rel = path.relative_to(COMPAT if path.is_relative_to(COMPAT) else ROOT).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(parts)


def _package_name(path: Path) -> str:
    name = _module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _imports(path: Path, package: str | None = None) -> list[tuple[str, bool]]:
    """Every import of the module (relative ones made absolute), True inside a function.

    ``package``: the package relative imports start from (default: the module's own).
    """
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend((a.name, in_function) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module, in_function))
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            here = (package or _package_name(path)).split(".")
            base = here[: len(here) - (node.level - 1)]
            found.append((".".join([*base, *([node.module] if node.module else [])]), in_function))
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


MODULES = sorted(
    [
        *ROOT.joinpath("prsd").rglob("*.py"),
        *ROOT.joinpath("azureml_user").rglob("*.py"),
        *COMPAT.joinpath("azureml").rglob("*.py"),  # not build/: what pip copied there
    ]
)


# The import-circle check covers prsd and azureml_user; compat's azureml package mirrors
# Azure's SDK, whose modules name each other (under TYPE_CHECKING and inside functions),
# and is held to its layer only.
PRSD_MODULES = [p for p in MODULES if not p.is_relative_to(COMPAT)]
NAMES = {_module_name(p) for p in PRSD_MODULES}


def package_of(module: str) -> str:
    """The layer a module belongs to: its entry in :data:`ALLOWED` (longest match)."""
    if module.split(".")[0] == "azureml_user":
        return "azureml_user"
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in ALLOWED:
            return ".".join(parts[:n])
    raise AssertionError(f"{module} belongs to no layer of the allow-list")


def _ours(imported: str) -> bool:
    return imported.split(".")[0] in ("prsd", "azureml_user", "azureml")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_layering(path: Path) -> None:
    """Every import of prsd's own packages is on the importing package's allow-list."""
    name = _module_name(path)
    layer = package_of(name)
    allowed = ALLOWED[layer] | {layer}
    found = {i for i, _ in _imports(path) if _ours(i)}
    bad = sorted(i for i in found if package_of(i) not in allowed)
    if layer == "azureml":
        bad += sorted(i for i in found if package_of(i) == "prsd.spool" and i not in COMPAT_STORAGE)
    only = sorted(allowed) + (sorted(COMPAT_STORAGE) if layer == "azureml" else [])
    assert not bad, f"{name} ({layer}) imports {bad}; {layer} may import only {only}"
    worker_side = name == "prsd" or any(name.startswith(w) for w in WORKER_SIDE)
    if worker_side:
        allowed = set(sys.stdlib_module_names) | {"prsd", "azureml_user", "__future__"}
        third_party = [
            i
            for i, lazy in _imports(path)
            if (i.split(".")[0] not in allowed and not (lazy and i.split(".")[0] in LAZY_ALLOWED))
            or (i.startswith("prsd.") and not i.startswith(WORKER_SIDE))
        ]
        assert not third_party, f"{name} runs in workers but imports {third_party}"


def test_the_allow_list_is_a_layering() -> None:
    """No package reaches itself through the allow-list (so no package import circle)."""

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(ALLOWED[start])
        while todo:
            p = todo.pop()
            if p not in seen:
                seen.add(p)
                todo.extend(ALLOWED.get(p, ()))
        return seen

    loops = [p for p in ALLOWED if p in reach(p)]
    assert not loops, f"the allow-list lets {loops} import themselves back"


def _module_graph() -> dict[str, set[str]]:
    """module -> the modules of ours it imports (``from pkg import mod`` names ``pkg.mod``)."""
    graph: dict[str, set[str]] = {}
    for path in PRSD_MODULES:
        name = _module_name(path)
        targets: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                subs = {f"{node.module}.{a.name}" for a in node.names} & NAMES
                targets |= subs or ({node.module} & NAMES)
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names} & NAMES
        graph[name] = targets - {name}
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (each an import circle)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return circles


def test_no_import_circle() -> None:
    """No module imports itself back, ``TYPE_CHECKING`` imports included."""
    circles = import_circles(_module_graph())
    assert not circles, f"import circles: {circles}"


def test_import_circles_are_found() -> None:
    """The circle finder sees a circle of three and ignores a chain."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_circles(graph) == [["a", "b", "c"]]
    assert import_circles({"a": {"b"}, "b": set()}) == []


def test_a_relative_import_is_resolved_against_its_package(tmp_path: Path) -> None:
    """``from ..spool import x`` in prsd/leader/m.py names prsd.spool."""
    module = tmp_path / "m.py"
    module.write_text("from ..spool import layout\nfrom . import job\n", encoding="utf-8")
    found = _imports(module, package="prsd.leader")
    assert found == [("prsd.spool", False), ("prsd.leader", False)]


def test_worker_side_lazy_imports_are_told_apart(tmp_path: Path) -> None:
    """pandas inside a function is lazy; at module level (or in a class body) it is not."""
    module = tmp_path / "m.py"
    module.write_text(
        "import os\nimport numpy\nclass A:\n    import pyarrow\ndef f():\n    import pandas\n",
        encoding="utf-8",
    )
    assert _imports(module) == [
        ("os", False),
        ("numpy", False),
        ("pyarrow", False),
        ("pandas", True),
    ]
