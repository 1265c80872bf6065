"""``python -m bench.runstart [--before TREE] [--repeats N]``: ``prsd run``'s own start,
measured on a real run of a tiny file-list job (10 files, mini-batch 2, 2 workers).

Per sample, in a fresh ``python -X importtime`` interpreter that runs ``prsd run JOB
--spool S`` (a new spool each time): the modules that process loaded from its start to
its exit, prsd's own among them, the sum of its top-level import times, and the seconds
from the process's start to the first ``run()`` (the entry script writes the wall time of
its first call to a file named in its own text). With ``--before TREE`` (a folder
holding another ``prsd/``, e.g. ``git archive main prsd azureml_user | tar -x -C TREE``)
both trees run alternately, sample by sample; medians are printed. Both trees are
byte-compiled first, as an installation is.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")
ENTRY = """import os, time
def run(mini_batch):
    if not os.path.exists({mark!r}):
        with open({mark!r} + ".tmp", "w") as f:
            f.write(repr(time.time()))
        os.replace({mark!r} + ".tmp", {mark!r})
    return [os.path.basename(p) for p in mini_batch]
"""
JOB = """type: parallel
name: runstart
input_data: ./data
mini_batch_size: "2"
resources: {max_concurrency_per_instance: 2}
task:
  code: ./code
  entry_script: score.py
  append_row_to: ./outputs/out.txt
"""
RUN = "import sys; from prsd.daemon import console_main; sys.argv = {argv!r}; console_main()"


def make_job(root: Path, mark: Path) -> Path:
    """A job folder of 10 files whose entry script marks its first run() at ``mark``."""
    job = root / "job"
    (job / "code").mkdir(parents=True)
    (job / "data").mkdir()
    for i in range(10):
        (job / "data" / f"f{i}.txt").write_text(f"{i}\n", encoding="utf-8")
    (job / "code" / "score.py").write_text(ENTRY.format(mark=str(mark)), encoding="utf-8")
    (job / "job.yaml").write_text(JOB, encoding="utf-8")
    return job


def sample(tree: Path) -> tuple[int, int, float, float]:
    """(modules, prsd modules, import ms, seconds to the first run()) of one ``prsd run``."""
    root = Path(tempfile.mkdtemp(prefix="prsd-runstart-"))
    try:
        mark = root / "first-run"
        job = make_job(root, mark)
        argv = ["prsd", "run", str(job), "--spool", str(root / "spool"), "--quiet"]
        env = dict(os.environ, PYTHONPATH=str(tree))
        start = time.time()
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", RUN.format(argv=argv)],
            capture_output=True,
            text=True,
            env=env,
            cwd=str(root),
            check=True,
            timeout=300,
        ).stderr
        first = float(mark.read_text(encoding="utf-8")) - start
        rows = [(int(m[2]), len(m[3]) // 2, m[4]) for m in map(LINE.match, out.splitlines()) if m]
        own = sum(1 for _c, _d, n in rows if n.startswith("prsd"))
        ms = sum(c for c, d, _n in rows if d == 0) / 1000
        return len(rows), own, ms, first
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.runstart", description=__doc__)
    p.add_argument("--before", type=Path, default=None, help="a tree to compare with")
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    trees = [("after", REPO)] + ([("before", args.before)] if args.before else [])
    for _label, tree in trees:
        compileall.compile_dir(str(tree / "prsd"), quiet=1)
    got: dict[str, list[tuple[int, int, float, float]]] = {t: [] for t, _ in trees}
    for _ in range(args.repeats):
        for label, tree in trees:
            got[label].append(sample(tree))
    print("| tree | modules | prsd modules | import ms (median) | first run() from start s |")
    print("|---|---|---|---|---|")
    for label, _tree in trees:
        runs = got[label]
        ms = statistics.median(r[2] for r in runs)
        first = [r[3] for r in runs]
        spread = f"{min(first):.3f}-{max(first):.3f}"
        print(
            f"| {label} | {statistics.median(r[0] for r in runs):.0f} | "
            f"{statistics.median(r[1] for r in runs):.0f} | {ms:.0f} | "
            f"{statistics.median(first):.3f} ({spread}) |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
