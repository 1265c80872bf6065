"""``python -m bench --suite quick|full [--workloads W1,W3] [--runners ...] [--repeats N]``."""

from __future__ import annotations

import argparse
import compileall
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import fleet, special, w7roles
from bench.cases import RUNNERS, SPECIAL, SUITES, WORKERS, Case, build_cases
from bench.execute import REPO, Sample, run_once
from bench.goals import judge
from bench.report import machine, rows_table, write
from bench.stats import Row, alternation, check_outputs, summarize

RESULTS = Path(__file__).resolve().parent / "results"
# W9's systems per suite: Ray only in the full one (its start-up alone takes 5-10 s here);
# the tiny one (bigmachine.sh --quick, a check that every step runs) prsd alone: the Dask
# runner's own check is tests/bench/test_bench_smoke.py.
W9_SYSTEMS = {"tiny": ("prsd",), "quick": ("prsd", "dask"), "full": ("prsd", "dask", "ray")}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--suite", choices=sorted(SUITES), default="quick")
    p.add_argument("--workloads", default="", help="comma-separated subset, e.g. W1,W3")
    p.add_argument(
        "--runners",
        default=",".join(r for r in RUNNERS if r not in ("prsd-run-spawn", "prsd-run-warm")),
        help=f"comma-separated subset of {', '.join(RUNNERS)}",
    )
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--w9-repeats",
        type=int,
        default=1,
        help="runs of each W9 (N, system); default 1: N = 32 takes minutes per system on "
        "a small machine, and W9's spread is read across N",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=WORKERS,
        help="worker processes of every runner in W1-W5 (prsd: max_concurrency_per_instance)",
    )
    p.add_argument(
        "--w9-agents",
        default="",
        help="comma-separated agent counts N of W9 (default: the suite's)",
    )
    p.add_argument("--results", type=Path, default=RESULTS, help="where tables are written")
    p.add_argument("--work", type=Path, default=None, help="scratch folder (default: temp)")
    return p


def run_cases(cases: list[Case], repeats: int, work: Path) -> tuple[list[Sample], list[Row]]:
    """Every case, repeats alternating between its runners; outputs checked; summarised."""
    samples: list[Sample] = []
    rows: list[Row] = []
    for case in cases:
        mine: list[Sample] = []
        warm_up(Path(case.input_path))
        for repeat in range(repeats):
            for runner in alternation(case.runners, repeat):
                s = run_once(case, runner, work, repeat)
                mine.append(s)
                print(
                    f"  {case.key} {runner} #{repeat}: {s.status} wall {s.wall_s} s "
                    f"first {s.first_run_s} s {s.note[:200]}",
                    flush=True,
                )
        check_outputs(mine, case.items if case.input_kind == "files" else _rows(case), "sequential")
        samples += mine
        rows += summarize(case, mine)
    return samples, rows


def warm_up(path: Path) -> None:
    """Read a case's input once, untimed, so that no runner pays for a cold page cache
    (the first runner of the first repeat did: W3 prsd-run 1.5 s cold, 0.7 s warm)."""
    files = [path] if path.is_file() else [p for p in sorted(path.rglob("*")) if p.is_file()]
    for f in files:
        with open(f, "rb") as stream:
            while stream.read(1 << 20):
                pass


def _rows(case: Case) -> int:
    return case.items


def byte_compile() -> None:
    """Byte-compile the checkout once, as ``pip install`` does for an installed package.

    An editable install compiles on first import and keeps the ``.pyc``; where
    ``PYTHONDONTWRITEBYTECODE`` is set (these machines set it) nothing is kept, and every
    process would compile prsd's and the harness's sources again (0.15 s per start).
    """
    for package in ("prsd", "azureml_user", "bench"):
        compileall.compile_dir(str(REPO / package), quiet=1)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    suite_workloads, sizes = SUITES[args.suite]
    chosen = tuple(w.strip().upper() for w in args.workloads.split(",") if w.strip())
    workloads = chosen or suite_workloads
    runners = tuple(r.strip() for r in args.runners.split(",") if r.strip())
    unknown = set(runners) - set(RUNNERS)
    if unknown:
        raise SystemExit(f"unknown runners: {', '.join(sorted(unknown))}")
    work = args.work or Path(tempfile.mkdtemp(prefix="prsd-bench-"))
    started = time.perf_counter()
    byte_compile()
    print(f"suite {args.suite}: {', '.join(workloads)}; runners {', '.join(runners)}", flush=True)
    cases, sizes = build_cases(args.suite, tuple(w for w in workloads if w not in SPECIAL), runners)
    cases = [replace(c, workers=args.workers) for c in cases]
    w9_agents = tuple(int(n) for n in args.w9_agents.split(",") if n.strip())
    samples, rows = run_cases(cases, args.repeats, work)
    extra: dict[str, Any] = {}
    if "W6" in workloads:
        print("W6 ...", flush=True)
        extra["W6"] = special.w6_scale(sizes.w6_files, work)
    if "W7" in workloads:
        print("W7 ...", flush=True)
        extra["W7"] = special.w7_spool_cost(sizes.w7_items, work)
        extra["W7"]["by_role"] = w7roles.w7_by_role(sizes.w7_items, work)
    if "W8" in workloads:
        print("W8 ...", flush=True)
        extra["W8"] = fleet.w8_many_agents(
            sizes.w8_items, sizes.w8_agents, max(1, min(args.repeats, 3)), work
        )
    if "W9" in workloads:
        print("W9 ...", flush=True)
        extra["W9"] = fleet.w9_fleet(
            w9_agents or sizes.w9_agents,
            sizes.w9_seconds,
            fleet.NAP_S,
            W9_SYSTEMS[args.suite],
            max(1, args.w9_repeats),
            work,
            sizes.w9_rig_agents,
        )
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    goals = judge(rows, extra)
    doc = {
        "suite": args.suite,
        "workloads": list(workloads),
        "runners": list(runners),
        "repeats": args.repeats,
        "w9_repeats": args.w9_repeats,
        "workers": args.workers,
        "sizes": sizes.__dict__,
        "machine": machine(work),
        "elapsed_s": time.perf_counter() - started,
        "samples": [s.to_json() for s in samples],
        "special": extra,
    }
    path = write(args.results, doc, rows, goals)
    print(rows_table(rows))
    for g in goals:
        print(
            f"{'met   ' if g['met'] else 'MISSED' if g['met'] is False else '-     '} {g['goal']}: {g['figure']}"
        )
    print(f"written {path}")
    bad = [s for s in samples if s.status in ("failed", "mismatch")]
    return 1 if bad else 0
