"""Which log files ``prsctl logs`` shows, and their labels (SPEC section 8's tree).

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

    def add(pattern: str, label: str) -> None:
        found.extend(
            (label.format(node=p.parent.name, stem=_stem(p.name)), p)
            for p in sorted(logs.glob(pattern))
            if p.is_file()
        )

    if q.process:
        proc = q.process
        if not q.errors:
            add(f"sys/node/{node}/{proc}.txt", "[{node}/{stem}]")
            add(f"user/stdout/{node}/{proc}.stdout.txt", "[{node}/{stem} stdout]")
            add(f"user/stderr/{node}/{proc}.stderr.txt", "[{node}/{stem} stderr]")
            add(f"user/entry_script_log/{node}/{proc}.log.txt", "[{node}/{stem} log]")
        add(f"user/error/{node}/{proc}.txt", "[{node}/{stem} error]")
        return found
    if q.errors:
        if q.node is None:
            add("job_error.txt", "[job_error]")
            add("sys/error/leader.txt", "[leader error]")
        add(f"user/error/{node}/*.txt", "[{node}/{stem} error]")
        add(f"sys/error/{node}/**/*", "[{node} sys error]")
        return found
    if q.node is not None:
        add(f"sys/node/{node}/_main.txt", "[{node}/_main]")
        add(f"sys/node/{node}/process*.txt", "[{node}/{stem}]")
        return found
    add("job_progress_overview.*.txt", "[overview]")
    add("sys/master_role*.txt", "[leader]")
    add("sys/node/*/_main.txt", "[{node}/_main]")
    add("job_result.txt", "[result]")
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
