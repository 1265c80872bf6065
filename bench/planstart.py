"""``python -m bench.planstart --before TREE``: W6's plan through the planner process, two trees.

Under a root leader a job owned by someone else is planned by a process with the
owner's ids (``prsd.leader.plan.planhelper``), its records read from a pipe; W6 (root-owned
jobs) plans in the leader's own thread instead. This times that other path alone, as
the leader starts it (``HelperPlan.start``, run as this user): seconds from the spawn
to the first mini-batch read from the pipe, and to the plan's end. Each sample is a
fresh interpreter started in its tree (working folder and ``PYTHONPATH`` the tree), the
trees alternating sample by sample; both trees are byte-compiled first (the helper
runs with ``PYTHONDONTWRITEBYTECODE``). The input folder (``--files`` empty files, the
bench's W6 set) is listed once, untimed, before the first sample.

Errors: a sample that fails is printed with its output and left out of the medians.
"""

from __future__ import annotations

import argparse
import compileall
import os
from pathlib import Path
from typing import Any

from bench.inputs import file_set
from bench.sidebyside import child_row
from bench.stats import median

HERE = Path(__file__).resolve().parents[1]

_CHILD = """
import json, shutil, sys, time, textwrap, tempfile
from pathlib import Path
t0 = time.perf_counter()
from prsd.jobspec.load import load_job_spec
from prsd.leader.plan.planhelper import encode_request
from prsd.leader.plan.planstream import HelperPlan
job = Path(tempfile.mkdtemp(prefix="planstart-"))
(job / "code").mkdir()
(job / "code" / "score.py").write_text("def run(mb):\\n    return mb\\n")
(job / "job.yaml").write_text(textwrap.dedent(f'''\\
    input_data: {sys.argv[1]}
    input_format: files
    mini_batch_size: "100"
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
    '''))
spec = load_job_spec(job)
start = time.perf_counter()
plan = HelperPlan.start(None, encode_request(spec, None, None), on_skip=lambda p, w: None,
                        on_order=lambda o: None, name="w6")
first, count = None, 0
while not plan.ended:
    got = plan.pull(1 if first is None else 1000, 1.0)
    if got and first is None:
        first = time.perf_counter() - start
    count += len(got)
end = time.perf_counter() - start
plan.close()
shutil.rmtree(job, ignore_errors=True)
print("ROW " + json.dumps({"first_s": first, "all_s": end, "mini_batches": count}))
"""


def sample(tree: Path, root: Path) -> dict[str, Any]:
    """One plan of ``root`` through ``tree``'s planner process."""
    row = child_row(tree, _CHILD, [str(root)], dict(os.environ, PYTHONPATH=str(tree)), 600)
    if row.get("status") == "failed":
        return row
    row["status"] = "ok"
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.planstart", description=__doc__)
    p.add_argument("--before", type=Path, required=True, help="the tree before the change")
    p.add_argument("--files", type=int, default=1_000_000, help="input files")
    p.add_argument("--repeats", type=int, default=3, help="samples per tree")
    args = p.parse_args(argv)
    trees = [("before", args.before.resolve()), ("after", HERE)]
    for _, tree in trees:
        compileall.compile_dir(tree / "prsd", quiet=1)
    root = file_set(args.files, 0)
    sum(len(names) for _, _, names in os.walk(root))  # listed once, untimed
    rows: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for repeat in range(args.repeats):
        for name, tree in trees if repeat % 2 == 0 else trees[::-1]:
            row = sample(tree, root)
            rows[name].append(row)
            print(f"#{repeat} {name}: {row}", flush=True)
    for name, mine in rows.items():
        ok = [r for r in mine if r["status"] == "ok"]
        firsts = [float(r["first_s"]) for r in ok if r.get("first_s") is not None]
        alls = [float(r["all_s"]) for r in ok]
        print(
            f"{name}: {len(ok)}/{len(mine)} ok, first mini-batch "
            f"{median(firsts) if firsts else None} s, all {median(alls) if alls else None} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
