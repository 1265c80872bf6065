"""Which log files ``prsctl logs`` shows, and their labels (the tree of docs/logs.md).

- no option: the job's story: progress overview, the leader's view, each node's
  ``_main.txt``, and the result;
- ``--errors``: the error summary, full tracebacks, system errors;
- ``--node N``: that node's agent log and its workers' mini-batch records;
- ``--process P``: everything about that worker: its mini-batch records, stdout,
  stderr, EntryScript log and tracebacks (on every node, or on ``--node``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.cli.logmerge import Source
from prsd.wire.logtree import LogTree

if TYPE_CHECKING:
    from pathlib import Path

MAX_BYTES = 64 * 1024 * 1024  # a bigger file is shown from its last 64 MB


@dataclass(frozen=True)
class LogQuery:
    errors: bool = False
    node: str | None = None
    process: str | None = None


def select_files(logs: Path, q: LogQuery) -> list[tuple[str, Path]]:
    """(label, path) of the files a query shows, in a stable order."""
    node = q.node or "*"
    found: list[tuple[str, Path]] = []

    def add(path: Path, label: str) -> None:
        found.extend(
            (label.format(node=p.parent.name, stem=_stem(p.name)), p)
            for p in sorted(logs.glob(LogTree(logs).pattern(path)))
            if p.is_file()
        )

    tree = LogTree(logs)
    if q.process:
        proc = q.process
        if not q.errors:
            add(tree.process_log(node, proc), "[{node}/{stem}]")
            add(tree.stdout(node, proc), "[{node}/{stem} stdout]")
            add(tree.stderr(node, proc), "[{node}/{stem} stderr]")
            add(tree.entry_log(node, proc), "[{node}/{stem} log]")
        add(tree.error(node, proc), "[{node}/{stem} error]")
        return found
    if q.errors:
        if q.node is None:
            add(tree.job_error, "[job_error]")
            add(tree.leader_error, "[leader error]")
        add(tree.error(node, "*"), "[{node}/{stem} error]")
        add(tree.sys_error_dir(node) / "**" / "*", "[{node} sys error]")
        return found
    if q.node is not None:
        add(tree.node_main(node), "[{node}/_main]")
        add(tree.process_log(node, "process*"), "[{node}/{stem}]")
        return found
    add(tree.progress_overview("*"), "[overview]")
    add(tree.master_role, "[leader]")
    add(tree.node_main("*"), "[{node}/_main]")
    add(tree.job_result, "[result]")
    return found


def _stem(name: str) -> str:
    return name.split(".", 1)[0]


def read_sources(
    files: list[tuple[str, Path]], unreadable: list[Path] | None = None
) -> list[Source]:
    """The files' lines (the tail of a huge file; undecodable bytes replaced).

    Files this user may not read are skipped and, when ``unreadable`` is given, added to it.
    """
    out = []
    for label, path in files:
        try:
            with open(path, "rb") as f:
                size = f.seek(0, 2)
                f.seek(max(size - MAX_BYTES, 0))
                text = f.read().decode("utf-8", errors="replace")
        except PermissionError:
            if unreadable is not None:
                unreadable.append(path)
            continue
        except OSError:
            continue
        out.append(Source(label, text.splitlines()))
    return out
