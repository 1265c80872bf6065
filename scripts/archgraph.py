#!/usr/bin/env python3
"""Draw prsd's package dependency graph from its import statements (Mermaid text).

    python scripts/archgraph.py                 # print the graph
    python scripts/archgraph.py --write DOC     # put it between the markers in DOC
    python scripts/archgraph.py --check DOC     # exit 1 if DOC's graph is not current

A package is a folder of ``prsd`` (``prsd.leader``) or a top-level module
(``prsd.errors``); ``azureml_user`` is one node, and so is ``azureml`` (the v1 SDK
names of compat/azureml-v1). Every import counts: relative ones,
those inside functions and those under ``TYPE_CHECKING``. The drawing is sorted, so
the same code always gives the same text.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN = "<!-- archgraph:begin (scripts/archgraph.py --write docs/architecture.md) -->"
END = "<!-- archgraph:end -->"
COMPAT = ROOT / "compat" / "azureml-v1"


def _module(path: Path) -> tuple[str, bool]:
    base = COMPAT if path.is_relative_to(COMPAT) else ROOT
    parts = [p for p in path.relative_to(base).with_suffix("").parts if p != "__init__"]
    return ".".join(parts), path.name == "__init__.py"


def node_of(module: str) -> str | None:
    """The graph node a module belongs to (None: not ours)."""
    parts = module.split(".")
    if parts[0] in ("azureml_user", "azureml"):
        return parts[0]
    if parts[0] != "prsd":
        return None
    if len(parts) == 1:
        return "prsd"
    if (ROOT / "prsd" / parts[1]).is_dir():
        return f"prsd.{parts[1]}"
    if (ROOT / "prsd" / f"{parts[1]}.py").is_file():
        return f"prsd.{parts[1]}"
    return None


def edges() -> dict[str, set[str]]:
    """node -> the other nodes it imports."""
    graph: dict[str, set[str]] = {}
    files = [
        *ROOT.joinpath("prsd").rglob("*.py"),
        *ROOT.joinpath("azureml_user").rglob("*.py"),
        *COMPAT.joinpath("azureml").rglob("*.py"),
    ]
    for path in sorted(files):
        name, is_package = _module(path)
        here = node_of(name)
        if here is None:
            continue
        graph.setdefault(here, set())
        package = name.split(".") if is_package else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module]
            elif isinstance(node, ast.ImportFrom) and node.level > 0:
                base = package[: len(package) - (node.level - 1)]
                targets = [".".join([*base, *([node.module] if node.module else [])])]
            for target in targets:
                there = node_of(target)
                if there is not None and there != here:
                    graph[here].add(there)
    return graph


def _id(node: str) -> str:
    return node.replace(".", "_")


def mermaid(graph: dict[str, set[str]]) -> str:
    """The graph as a Mermaid flowchart, importer above imported."""
    lines = ["```mermaid", "flowchart TD"]
    lines += [f'    {_id(n)}["{n}"]' for n in sorted(graph)]
    for node in sorted(graph):
        lines += [f"    {_id(node)} --> {_id(t)}" for t in sorted(graph[node])]
    lines.append("```")
    return "\n".join(lines) + "\n"


def with_graph(doc: str, drawing: str) -> str:
    """``doc`` with the text between the markers replaced by ``drawing``."""
    head, found, rest = doc.partition(BEGIN)
    _, found_end, tail = rest.partition(END)
    if not found or not found_end:
        raise SystemExit(f"the markers are missing:\n{BEGIN}\n{END}")
    return f"{head}{BEGIN}\n{drawing}{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", type=Path, metavar="DOC")
    group.add_argument("--check", type=Path, metavar="DOC")
    args = parser.parse_args(argv)
    drawing = mermaid(edges())
    if args.write is not None:
        doc = args.write.read_text(encoding="utf-8")
        args.write.write_text(with_graph(doc, drawing), encoding="utf-8")
        return 0
    if args.check is not None:
        doc = args.check.read_text(encoding="utf-8")
        if with_graph(doc, drawing) != doc:
            sys.stderr.write(
                f"{args.check}: the package graph is not current; run "
                f"python scripts/archgraph.py --write {args.check}\n"
            )
            return 1
        return 0
    sys.stdout.write(drawing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
