"""``python -m bench.sidebyside --before TREE``: W9 (prsd) and W1 through two trees, alternating.

A change's before/after in one run: every sample is a fresh interpreter started in its
tree (working folder and ``PYTHONPATH`` the tree), so it imports that tree's prsd and
bench, and the trees alternate sample by sample (before, after; then after, before; ...)
so a load that drifts over the run hits both alike. This tree is "after".

- W9: one prsd run of ``bench.fleet`` per (N, repeat, tree): a leader and N agents of 2
  slots, ``run()`` sleeping 20 ms per mini-batch, ``seconds`` of ideal work; its
  efficiency and the CPU per mini-batch of the leader and of all agents (µs).
- W1 and W2 (``--w1-repeats``, ``--w2-repeats`` > 0): ``python -m bench --suite full
  --workloads W1 --runners prsd-run,pool --repeats 1`` (W2 likewise) per (repeat, tree);
  mini-batches/s and prsd / pool of each variant (the pool row's ratio), read from the
  table it writes.
- W6 (``--w6-repeats`` > 0): one ``bench.special.w6_scale`` per (repeat, tree): a fresh
  leader and agent, ``--w6-files`` empty files (listed once, untimed), mini-batch 100;
  from the submit: the job taken in, the first task in ``pending/``, the first claim,
  all planned; the first two also from the intake (``state/started.json``);
  ``--w6-undeclared``: also with the job's ``input_format`` left out.

Prints the medians per tree and writes every sample to ``--out`` (JSON).
Errors: a sample that fails is kept with its status and left out of the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.stats import median

HERE = Path(__file__).resolve().parents[1]

_W9_CHILD = """
import json, sys
from pathlib import Path
import bench.fleet as fleet
n, seconds, work = int(sys.argv[1]), float(sys.argv[2]), Path(sys.argv[3])
count = fleet.plan_count(n, seconds, fleet.NAP_S)
row = fleet._prsd(n, count, fleet.NAP_S, work, False)
if row.get("wall_s"):
    row["efficiency"] = count / row["wall_s"] / fleet.ideal_rate(n, fleet.NAP_S)
print("ROW " + json.dumps(row))
"""


_W6_CHILD = """
import json, sys
from pathlib import Path
import bench.special as special
res = special.w6_scale(int(sys.argv[1]), Path(sys.argv[2]), declared=sys.argv[3] == "1")
res.pop("note", None)
res["status"] = "ok" if res.get("state") == "Completed" and res.get("output_ok") else "failed"
print("ROW " + json.dumps(res))
"""
W6_KEYS = (
    "taken_in_s",
    "first_claimable_s",
    "first_claimable_after_intake_s",
    "first_claimed_s",
    "first_claimed_after_intake_s",
    "all_planned_s",
    "leader_rss_mb",
)


def _child_env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    return env


def child_row(
    tree: Path, script: str, args: list[str], env: dict[str, str], timeout: float
) -> dict[str, Any]:
    """Run ``script`` (``python -c``) in ``tree`` and return the last ``ROW {json}`` line it
    printed; a failed run (non-zero exit, no row) is ``{"status": "failed", "note": ...}``."""
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    rows = [line[4:] for line in proc.stdout.splitlines() if line.startswith("ROW ")]
    if proc.returncode != 0 or not rows:
        return {"status": "failed", "note": (proc.stdout + proc.stderr)[-500:]}
    row: dict[str, Any] = json.loads(rows[-1])
    return row


def w9_sample(tree: Path, n: int, seconds: float, work: Path) -> dict[str, Any]:
    """One W9 prsd run from ``tree``: its row (status, efficiency, µs per mini-batch)."""
    return child_row(tree, _W9_CHILD, [str(n), str(seconds), str(work)], _child_env(tree), 600)


def w6_sample(tree: Path, files: int, work: Path, declared: bool = True) -> dict[str, Any]:
    """One W6 run from ``tree``: its figures (see :data:`W6_KEYS`); ``declared`` False:
    the job leaves ``input_format`` out."""
    work.mkdir(parents=True, exist_ok=True)
    args = [str(files), str(work), "1" if declared else "0"]
    return child_row(tree, _W6_CHILD, args, _child_env(tree), 900)


def w6_samples(
    trees: list[tuple[str, Path]], repeats: int, files: int, undeclared: bool, work: Path
) -> list[dict[str, Any]]:
    """W6 ``repeats`` times per tree, trees alternating (and without ``input_format``)."""
    out: list[dict[str, Any]] = []
    variants = [True, False] if undeclared else [True]
    for repeat in range(repeats):
        for declared in variants:
            what = f"{files} files" + ("" if declared else ", format inferred")
            for name, tree in order(trees, repeat):
                row = w6_sample(tree, files, work / f"w6-{name}-{repeat}", declared)
                out.append({"workload": "W6", "what": what, "tree": name, "row": row})
                print(f"W6 {what} #{repeat} {name}: {row}", flush=True)
    return out


def suite_sample(tree: Path, work: Path, workload: str = "W1") -> list[dict[str, Any]]:
    """One run of ``workload`` (prsd-run and pool) from ``tree``: the rows of its table."""
    results = work / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--suite", "full", "--workloads", workload]
        + ["--runners", "prsd-run,pool", "--repeats", "1", "--results", str(results)],
        cwd=tree,
        env=_child_env(tree),
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    table = results / "full-latest.json"
    if proc.returncode != 0 or not table.exists():
        return [{"status": "failed", "note": (proc.stdout + proc.stderr)[-500:]}]
    rows: list[dict[str, Any]] = json.loads(table.read_text())["rows"]
    return rows


def suite_samples(
    trees: list[tuple[str, Path]], workload: str, repeats: int, work: Path
) -> list[dict[str, Any]]:
    """``workload`` ``repeats`` times per tree, trees alternating: prsd-run's rows, each
    with its pool row's ratio as ``prsd_over_pool``."""
    out: list[dict[str, Any]] = []
    for repeat in range(repeats):
        for name, tree in order(trees, repeat):
            rows = suite_sample(tree, work / f"{workload.lower()}-{name}-{repeat}", workload)
            pool = {r.get("variant"): r.get("ratio_run") for r in rows if r.get("runner") == "pool"}
            for row in rows:
                if row.get("runner", "prsd-run") != "prsd-run":
                    continue
                what = row.get("variant", "?")
                row["prsd_over_pool"] = pool.get(what)
                out.append({"workload": workload, "what": what, "tree": name, "row": row})
                print(f"{workload} {what} #{repeat} {name}: {row}", flush=True)
    return out


def order(trees: list[tuple[str, Path]], repeat: int) -> list[tuple[str, Path]]:
    """The trees in this repeat's turn: before, after; then after, before; ..."""
    return trees if repeat % 2 == 0 else trees[::-1]


def _med(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [float(r[key]) for r in rows if r.get("status") == "ok" and r.get(key) is not None]
    middle = median(values)
    return round(middle, 3) if middle is not None else None


def summarize(samples: list[dict[str, Any]]) -> list[str]:
    """Lines of medians per (workload, N or variant, tree)."""
    lines = []
    keys = sorted({(s["workload"], s["what"]) for s in samples})
    for workload, what in keys:
        for tree in ("before", "after"):
            mine = [s["row"] for s in samples if (s["workload"], s["what"], s["tree"]) ==
                    (workload, what, tree)]  # fmt: skip
            ok = sum(1 for r in mine if r.get("status") == "ok")
            if workload == "W6":
                cells = [f"{k} {_med(mine, k)}" for k in W6_KEYS]
            elif workload == "W9":
                cells = [f"eff {_med(mine, 'efficiency')}", f"leader {_med(mine, 'leader_us_per_mb')}",
                         f"agents {_med(mine, 'agents_us_per_mb')} us/mb"]  # fmt: skip
            else:
                cells = [
                    f"{_med(mine, 'mbs_per_s')} mb/s",
                    f"prsd/pool {_med(mine, 'prsd_over_pool')}",
                ]
            lines.append(f"{workload} {what} {tree}: {ok}/{len(mine)} ok, " + ", ".join(cells))
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.sidebyside", description=__doc__)
    p.add_argument("--before", type=Path, required=True, help="the tree before the change")
    p.add_argument("--w9-agents", default="1,4", help="comma-separated N")
    p.add_argument("--w9-seconds", type=float, default=20.0, help="ideal seconds of work")
    p.add_argument("--repeats", type=int, default=3, help="W9 samples per (N, tree)")
    p.add_argument("--w1-repeats", type=int, default=0, help="W1 samples per tree")
    p.add_argument("--w2-repeats", type=int, default=0, help="W2 samples per tree")
    p.add_argument("--w6-repeats", type=int, default=0, help="W6 samples per tree")
    p.add_argument(
        "--w6-undeclared",
        action="store_true",
        help="W6 also without input_format (the format inferred at intake)",
    )
    p.add_argument("--w6-files", type=int, default=1_000_000, help="W6's input files")
    p.add_argument("--out", type=Path, default=None, help="where the samples go (JSON)")
    args = p.parse_args(argv)
    trees = [("before", args.before.resolve()), ("after", HERE)]
    samples: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="sbs-") as tmp:
        work = Path(tmp)
        for n in (int(x) for x in args.w9_agents.split(",") if x):
            for repeat in range(args.repeats):
                for name, tree in order(trees, repeat):
                    row = w9_sample(tree, n, args.w9_seconds, work / "w9")
                    samples.append({"workload": "W9", "what": f"N={n}", "tree": name, "row": row})
                    print(f"W9 N={n} #{repeat} {name}: {row}", flush=True)
        samples += w6_samples(trees, args.w6_repeats, args.w6_files, args.w6_undeclared, work)
        for workload, repeats in (("W1", args.w1_repeats), ("W2", args.w2_repeats)):
            samples += suite_samples(trees, workload, repeats, work)
    for line in summarize(samples):
        print(line)
    if args.out is not None:
        args.out.write_text(json.dumps(samples, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
