"""The worker host runs under any job interpreter: Python 3.7 syntax, standard library only."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKER_FILES = sorted(
    [
        *(REPO / "prsd" / "worker").glob("*.py"),
        REPO / "prsd" / "__init__.py",
        REPO / "prsd" / "fdio.py",
        *(REPO / "prsd" / "wire").glob("*.py"),
        *(REPO / "azureml_user").rglob("*.py"),
    ]
)
ALLOWED_PACKAGES = {"prsd", "azureml_user"}
VERMIN = str(Path(sys.executable).with_name("vermin"))  # a dev dependency


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(REPO)) for p in paths]


LAZY_PACKAGES = {"pandas", "pyarrow", "numpy"}  # allowed inside functions (tabular loading)


def _runtime_imports(tree: ast.Module) -> set[str]:
    """Top-level names of modules imported outside ``if TYPE_CHECKING:`` blocks
    (pandas, pyarrow and numpy imported inside a function are left out)."""
    names: set[str] = set()

    def visit(nodes: list[ast.stmt], lazy: bool = False) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
                visit(node.orelse, lazy)
                continue
            found: set[str] = set()
            if isinstance(node, ast.Import):
                found = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found = {node.module.split(".")[0]}
            names.update(found - LAZY_PACKAGES if lazy else found)
            inner = lazy or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            for field in ("body", "orelse", "finalbody"):
                children = getattr(node, field, None)
                if isinstance(children, list):
                    visit(children, inner)
            for handler in getattr(node, "handlers", []):
                visit(handler.body, inner)

    visit(tree.body)
    return names


def test_worker_files_are_found() -> None:
    """The file list covers the boot file, the host and the shim."""
    names = {p.name for p in WORKER_FILES}
    assert {"boot.py", "host.py", "protocol.py", "entry_script.py"} <= names
    assert REPO / "azureml_user" / "parallel_run" / "__init__.py" in WORKER_FILES


@pytest.mark.parametrize("path", WORKER_FILES, ids=_ids(WORKER_FILES))
def test_parses_as_python_37(path: Path) -> None:
    """Every worker-side file is valid Python 3.7 syntax."""
    ast.parse(path.read_text(), str(path), feature_version=(3, 7))


@pytest.mark.parametrize("path", WORKER_FILES, ids=_ids(WORKER_FILES))
def test_imports_only_the_standard_library(path: Path) -> None:
    """Worker-side files import nothing outside the standard library at runtime."""
    imports = _runtime_imports(ast.parse(path.read_text(), str(path)))
    foreign = imports - set(sys.stdlib_module_names) - ALLOWED_PACKAGES - {"__future__"}
    assert not foreign, f"{path.name} imports {sorted(foreign)}"


@pytest.mark.parametrize("path", WORKER_FILES, ids=_ids(WORKER_FILES))
def test_postpones_annotations(path: Path) -> None:
    """Annotations stay strings (``X | None`` is not evaluated on 3.7)."""
    text = path.read_text()
    annotated = any(
        isinstance(node, ast.AnnAssign)
        or (isinstance(node, ast.arg) and node.annotation is not None)
        or (isinstance(node, ast.FunctionDef) and node.returns is not None)
        for node in ast.walk(ast.parse(text))
    )
    assert not annotated or "from __future__ import annotations" in text


def test_vermin_finds_nothing_newer_than_37() -> None:
    """vermin sees no API or syntax newer than Python 3.7 in the worker-side files."""
    result = subprocess.run(
        [VERMIN, "--target=3.7-", "--no-tips", "--violations"] + [str(p) for p in WORKER_FILES],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


OLD_PYTHONS = ("3.7.16", "3.8.18")  # CPython under pyenv on the project's machines


@pytest.mark.parametrize("version", OLD_PYTHONS)
def test_every_worker_module_imports_on_old_pythons(version: str) -> None:
    """Each worker-side module imports on CPython 3.7 and 3.8 (what vermin cannot see:
    a runtime use of ``X | Y`` or ``list[int]``)."""
    python = Path("/root/.pyenv/versions") / version / "bin" / "python"
    assert python.is_file(), f"{python} is needed (pyenv install {version})"
    compat = REPO / "azureml_user" / "compat"  # prsd's offline azureml.core, as workers see it
    modules = sorted(
        ".".join(
            p.relative_to(compat if p.is_relative_to(compat) else REPO).with_suffix("").parts
        ).removesuffix(".__init__")
        for p in WORKER_FILES
        if p != compat / "__init__.py"
    )
    assert "azureml.core.run" in modules and "prsd.worker.host" in modules
    code = (
        "import importlib, sys\nsys.path[:0] = sys.argv[1:3]\n"
        "for m in sys.argv[3:]: importlib.import_module(m)\nprint('ok')"
    )
    done = subprocess.run(
        [str(python), "-I", "-c", code, str(REPO), str(compat), *modules],
        cwd=REPO,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.strip() == "ok", done.stdout + done.stderr
