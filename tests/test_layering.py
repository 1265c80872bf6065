"""The package's layering, checked from the import statements of every module.

- ``prsd.storage`` imports nothing from leader, agent, cli, daemon or embedded.
- ``prsd.leader`` and ``prsd.agent`` never import each other.
- ``prsd.worker``, ``prsd/__init__`` and ``azureml_user`` import only the standard
  library and ``prsd.worker`` at module level (they run under the job's own
  interpreter); inside a function they may also import pandas, pyarrow and numpy
  (loading a tabular mini-batch, which needs them from the job's environment).
- Only ``daemon``, ``embedded`` and the cli wire leader and agent together.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {
    "prsd.storage": ("prsd.leader", "prsd.agent", "prsd.cli", "prsd.daemon", "prsd.embedded"),
    "prsd.jobspec": ("prsd.leader", "prsd.agent", "prsd.cli", "prsd.daemon", "prsd.embedded"),
    "prsd.leader": ("prsd.agent", "prsd.cli", "prsd.daemon", "prsd.embedded"),
    "prsd.agent": ("prsd.leader", "prsd.cli", "prsd.daemon", "prsd.embedded"),
}
WORKER_SIDE = ("prsd.worker", "azureml_user")
LAZY_ALLOWED = {"pandas", "pyarrow", "numpy"}  # worker side, inside functions only


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, bool]]:
    """Every absolute import of the module, with True when it is inside a function."""
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend((a.name, in_function) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, in_function))
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


MODULES = sorted(
    [*ROOT.joinpath("prsd").rglob("*.py"), *ROOT.joinpath("azureml_user").rglob("*.py")]
)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_layering(path: Path) -> None:
    """No module imports across a forbidden edge of the layer table."""
    name = _module_name(path)
    imports = [i for i, _ in _imports(path)]
    for layer, banned in FORBIDDEN.items():
        if name == layer or name.startswith(layer + "."):
            bad = [i for i in imports if any(i == b or i.startswith(b + ".") for b in banned)]
            assert not bad, f"{name} imports {bad}, across the layering of {layer}"
    worker_side = name == "prsd" or any(name.startswith(w) for w in WORKER_SIDE)
    if worker_side:
        allowed = set(sys.stdlib_module_names) | {"prsd", "azureml_user", "__future__"}
        third_party = [
            i
            for i, lazy in _imports(path)
            if (i.split(".")[0] not in allowed and not (lazy and i.split(".")[0] in LAZY_ALLOWED))
            or (i.startswith("prsd.") and not i.startswith("prsd.worker"))
        ]
        assert not third_party, f"{name} runs in workers but imports {third_party}"


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
