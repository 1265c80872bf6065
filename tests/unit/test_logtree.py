"""The log tree is named in one module: its paths are the documented ones, and no other
module joins its segments."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from prsd.wire.logtree import (
    DISK_USAGE_FILE,
    NODE_USAGE_FILE,
    PROCESSES_USAGE_FILE,
    LogTree,
)

ROOT = Path(__file__).resolve().parents[2]
T = LogTree(Path("/spool/jobs/j1/logs"))
N, P = "<node>", "<process>"

# docs/logs.md's tree, each line's path, as the module makes it.
MADE = {
    "readme.txt": T.readme,
    "job_result.txt": T.job_result,
    "job_progress_overview.<YYYYMMDD>.txt": T.progress_overview("<YYYYMMDD>"),
    "job_error.txt": T.job_error,
    "sys/job_notes.txt": T.job_notes,
    "sys/master_role.txt": T.master_role,
    "sys/job_report/processed_mini-batches.csv": T.report_csv,
    "sys/failed_items.txt": T.failed_items,
    "sys/node/<node>/_main.txt": T.node_main(N),
    "sys/node/<node>/<process>.txt": T.process_log(N, P),
    "sys/node/<node>/<process>.profile": T.process_profile(N, P),
    "sys/error/<node>/...": T.sys_error_dir(N) / "...",
    "user/entry_script_log/<node>/<process>.log.txt": T.entry_log(N, P),
    "user/stdout/<node>/<process>.stdout.txt": T.stdout(N, P),
    "user/stderr/<node>/<process>.stderr.txt": T.stderr(N, P),
    "user/error/<node>/<process>.txt": T.error(N, P),
    "user/error.txt": T.user_error,
    "user/std_log.txt": T.std_log,
    "user/entry_script_log/<node>/std_log.txt": T.node_std_log(N),
    "user/metrics/<node>/<process>.jsonl": T.metrics(N, P),
    "perf/<node>/node_resource_usage.csv": T.perf(N) / NODE_USAGE_FILE,
    "perf/<node>/processes_resource_usage.csv": T.perf(N) / PROCESSES_USAGE_FILE,
    "perf/<node>/node_disk_usage.csv": T.perf(N) / DISK_USAGE_FILE,
}


def _documented() -> list[str]:
    text = (ROOT / "docs" / "logs.md").read_text(encoding="utf-8")
    block = text.split("```\n", 2)[1]
    return [line.split()[0] for line in block.splitlines() if line.strip()]


def test_every_documented_file_is_named_by_the_log_tree() -> None:
    documented = [p for p in _documented() if not p.startswith("perf/<node>/os/")]
    assert sorted(documented) == sorted(MADE)
    for rel, path in MADE.items():
        assert path == T.root / rel


def test_report_parts_entry_logs_and_patterns() -> None:
    assert T.report_part(1) == T.report_csv
    assert T.report_part(3).name == "processed_mini-batches.epoch-00000003.csv"
    logs = T.entry_script_logs("n1")
    assert LogTree.job_of_entry_script_logs(logs) == Path("/spool/jobs/j1")
    assert LogTree.job_of_entry_script_logs("/tmp/elsewhere/n1") is None
    assert T.pattern(T.error("*", "*")) == "user/error/*/*.txt"


SEGMENTS = {"logs", "sys", "user", "perf", "node", "error", "job_report", "entry_script_log"}
FILE = re.compile(r"(job_result|job_error|master_role|_main|readme|failed_items)\.txt$|\.jsonl$")


def _joins(path: Path) -> list[str]:
    """String constants joined into a path (``x / "sys"``, ``os.path.join(..., "user")``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        parts: list[ast.expr] = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            parts = [node.left, node.right]
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "os.path.join":
            parts = list(node.args)
        for part in parts:
            text = part.value if isinstance(part, ast.Constant) else None
            if isinstance(text, str) and (text in SEGMENTS or FILE.search(text)):
                found.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}: {text!r}")
    return found


def test_no_other_module_joins_the_log_trees_segments() -> None:
    own = ROOT / "prsd" / "wire" / "logtree.py"
    files = [*ROOT.joinpath("prsd").rglob("*.py"), *ROOT.joinpath("azureml_user").rglob("*.py")]
    found = [j for f in sorted(files) if f != own for j in _joins(f)]
    # the spool's layout names a retry job's retry_kept.jsonl (a job file, not a log)
    allowed = [j for j in found if j.startswith("prsd/spool/layout.py:") and "_kept.jsonl" in j]
    assert found == allowed, "\n".join(found)
