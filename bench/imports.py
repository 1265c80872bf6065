"""``python -m bench.imports [--before TREE] [--repeats N]``: what each prsd process
imports before it works, from ``python -X importtime`` in fresh interpreters.

Paths: ``prsd run`` of a job (what ``prsd.runcmd`` imports up to leading and serving
it; a pipeline's modules only when it runs one), ``prsd agent`` and
``prsd leader`` (the command line parsed, the daemon's classes loaded) and the worker
host (``boot.py``'s isolation, then the host, as a worker has it before ``init()``).
For each: modules loaded, prsd's own among them, the median wall milliseconds of the
imports, and the costliest third-party and standard-library packages (cumulative ms
of the first import that loaded them). With ``--before TREE`` (a folder holding another
``prsd/``, e.g. ``git archive main prsd azureml_user | tar -x -C TREE``) both trees run
alternately in one call, so the figures compare on one machine at one time. Both trees
are byte-compiled first, as an installation is.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PATHS = {
    "prsd run": "import prsd.daemon; prsd.daemon.parser(); import prsd.runcmd, prsd.embedded, "
    "prsd.submit, prsd.cli.runview, prsd.cli.jobnotes, prsd.cli.buildable, prsd.read.fleet, "
    "prsd.jobspec.pipefile, prsd.agent.forks, prsd.agent.agent",
    "prsd agent": "import prsd.daemon; prsd.daemon.parser(); "
    "import prsd.agent.agent, prsd.agent.nodeid, prsd.sdnotify",
    "prsd leader": "import prsd.daemon; prsd.daemon.parser(); "
    "import prsd.leader.leader, prsd.leader.election, prsd.sdnotify, prsd.spool.watch",
    "worker host": "import sys; sys.path.insert(0, {boot!r}); import boot; "
    "boot.isolate_imports(); import prsd.worker.host",
}
LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def measure(tree: Path, code: str) -> tuple[int, int, float, dict[str, float]]:
    """(modules, prsd modules, ms, {package: ms}) of one fresh interpreter running ``code``."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    text = code.format(boot=str(tree / "prsd" / "worker"))
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", text],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        check=True,
    ).stderr
    rows = [(int(m[2]), len(m[3]) // 2, m[4]) for m in map(LINE.match, out.splitlines()) if m]
    packages: dict[str, float] = {}
    for i, (cumulative, depth, name) in enumerate(rows):
        parent = next((n for _c, d, n in rows[i + 1 :] if d < depth), None)
        if not name.startswith(("prsd", "azureml_user", "boot")) and (
            parent is None or parent.startswith(("prsd", "boot"))
        ):
            root = name.split(".")[0]
            packages[root] = packages.get(root, 0.0) + cumulative / 1000
    total = sum(c for c, d, _n in rows if d == 0) / 1000
    own = sum(1 for _c, _d, n in rows if n.startswith("prsd"))
    return len(rows), own, total, packages


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.imports", description=__doc__)
    p.add_argument("--before", type=Path, default=None, help="a tree to compare with")
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args(argv)
    trees = [("after", REPO)] + ([("before", args.before)] if args.before else [])
    for _label, tree in trees:  # as installed: no run pays for compiling (cli.byte_compile)
        compileall.compile_dir(str(tree / "prsd"), quiet=1)
    print("| path | tree | modules | prsd modules | import ms (median) | costliest packages ms |")
    print("|---|---|---|---|---|---|")
    for name, code in PATHS.items():
        runs: dict[str, list[tuple[int, int, float, dict[str, float]]]] = {t: [] for t, _ in trees}
        for _ in range(args.repeats):
            for label, tree in trees:
                runs[label].append(measure(tree, code))
        for label, _tree in trees:
            got = runs[label]
            ms = statistics.median(r[2] for r in got)
            top: dict[str, list[float]] = {}
            for r in got:
                for k, v in r[3].items():
                    top.setdefault(k, []).append(v)
            medians = [(k, statistics.median(v)) for k, v in top.items()]
            costly = sorted(medians, key=lambda kv: -kv[1])[:5]
            listed = ", ".join(f"{k} {v:.0f}" for k, v in costly)
            print(f"| {name} | {label} | {got[0][0]} | {got[0][1]} | {ms:.0f} | {listed} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
