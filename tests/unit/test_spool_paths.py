"""Every name of the spool is spelled once, in prsd/spool/layout.py (a pipeline's
folder in prsd/spool/pipelinelayout.py beside it).

The names are read from those modules themselves: each string literal they join into
a path (``self.root / "jobs"``) and each string constant they define (``REFUSED``). A module
outside the storage layer that joins one of them by hand (``/``, ``os.path.join``,
``joinpath``, ``open_under``'s list of names) fails this test: it should take the path
from a ``SpoolLayout``, ``JobLayout`` or ``PipelineLayout`` instead. prsd/wire and
prsd/worker are left out: they run under the job's interpreter (standard library only)
and cannot import the storage layer; ``logs/`` is named by ``prsd.wire.logtree``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from prsd.spool.layout import SpoolLayout

ROOT = Path(__file__).resolve().parents[2]
LAYOUTS = (ROOT / "prsd/spool/layout.py", ROOT / "prsd/spool/pipelinelayout.py")
EXEMPT = ("prsd/spool/", "prsd/wire/", "prsd/worker/")
JOINS = {"join", "joinpath", "open_under"}


def spool_names(layouts: tuple[Path, ...] = LAYOUTS) -> frozenset[str]:
    """The names the layout modules join into paths or define as module constants."""
    names: set[str] = set()
    for layout in layouts:
        tree = ast.parse(layout.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                names.update(_text(side) for side in (node.left, node.right) if _text(side))
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and _text(stmt.value):
                names.add(_text(stmt.value))
    return frozenset(names)


def _text(node: ast.AST) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _names_a_segment(node: ast.AST, names: frozenset[str]) -> bool:
    parts = [p for p in _text(node).split("/") if p]
    if isinstance(node, ast.List | ast.Tuple):
        return any(_names_a_segment(e, names) for e in node.elts)
    return any(p in names for p in parts)


def hand_joins(source: str, names: frozenset[str]) -> list[str]:
    """``line: code`` of every join of a spool name in ``source``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            args: list[ast.expr] = [node.left, node.right]
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            args = list(node.args) if called in JOINS else []
        else:
            continue
        if any(_names_a_segment(a, names) for a in args):
            found.append((node.lineno, f"{node.lineno}: {ast.unparse(node)}"))
    return [text for _, text in sorted(found)]


def _modules() -> list[Path]:
    found = [*ROOT.joinpath("prsd").rglob("*.py"), *ROOT.joinpath("compat").rglob("*.py")]
    return sorted(
        p
        for p in found
        if not str(p.relative_to(ROOT)).startswith(EXEMPT) and "build" not in p.parts
    )


def test_the_names_are_read_from_the_layout() -> None:
    """The names cover the spool's top folders, a job's files and a pipeline's files."""
    names = spool_names()
    expected = {"inbox", "jobs", "pipelines", "requests", "nodes.json", ".refused"}
    expected |= {"status.json", "final.json", "origin.json", "pipeline.json", "state.json"}
    assert expected <= names


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_spool_name_is_joined_by_hand(path: Path) -> None:
    """Outside the storage layer, spool paths come from the layout."""
    found = hand_joins(path.read_text(encoding="utf-8"), spool_names())
    assert not found, f"{path.relative_to(ROOT)} joins spool names by hand: {found}"


def test_a_hand_join_is_found() -> None:
    """Each kind of join is seen; a join of other names is not."""
    source = (
        "import os\n"
        "a = spool.root / 'pipelines' / pid\n"
        "b = os.path.join(root, 'leader/nodes.json')\n"
        "c = root.joinpath('inbox')\n"
        "d = open_under(anchor, [pid, 'state.json'])\n"
        "e = folder / 'my-data.csv'\n"
    )
    found = hand_joins(source, spool_names())
    assert [line.split(":")[0] for line in found] == ["2", "3", "4", "5"]


def test_a_job_knows_its_spool_and_a_pipeline_its_files(tmp_path: Path) -> None:
    spool = SpoolLayout(tmp_path / "spool")
    job = spool.job("j-1")
    assert job.spool == spool
    assert job.node_report("n1") == tmp_path / "spool/jobs/j-1/nodes/n1.json"
    assert spool.nodes_view == tmp_path / "spool/leader/nodes.json"
    assert spool.refused == tmp_path / "spool/jobs/.refused"
    pipeline = spool.pipeline("p-1")
    assert pipeline.record == tmp_path / "spool/pipelines/p-1/pipeline.json"
    assert pipeline.step("a") == tmp_path / "spool/pipelines/p-1/steps/a"
    assert {"retry_kept.jsonl", "retry_order.json", "state"} <= job.daemon_names()
