"""The performance goals (issue 17's, which tightened issue 8's), judged from one harness
run's summary: pure functions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.stats import Row


def _row(rows: list[Row], workload: str, variant: str, runner: str) -> Row | None:
    for r in rows:
        if (r.workload, r.variant, r.runner) == (workload, variant, runner):
            return r
    return None


def _goal(goal: str, figure: str, met: bool | None) -> dict[str, Any]:
    return {"goal": goal, "figure": figure, "met": met}


def _ratio_goal(rows: list[Row], key: tuple[str, str], other: str, limit: float) -> dict[str, Any]:
    r = _row(rows, key[0], key[1], other)
    own = _row(rows, key[0], key[1], "prsd-run")
    goal = f"{key[0]} {key[1]}: prsd / {other} <= {limit}"
    if own is not None and own.status == "unsupported":
        return _goal(goal, f"prsd: unsupported ({own.note})", False)
    if r is None or r.ratio_run is None:
        return _goal(goal, "not measured", None)
    return _goal(goal, f"{r.ratio_run:.2f}", r.ratio_run <= limit)


def judge(rows: list[Row], special: dict[str, Any]) -> list[dict[str, Any]]:
    """Each goal that this run measured: its figure and whether it holds."""
    out: list[dict[str, Any]] = []
    w1 = _row(rows, "W1", "mb10", "prsd-run")
    if w1 is not None and w1.mbs_per_s is not None:
        d = _row(rows, "W1", "mb10", "prsd-daemons")
        extra = f"; leader+agent {d.mbs_per_s:,.0f}/s" if d and d.mbs_per_s else ""
        fig = f"{w1.mbs_per_s:,.0f} mini-batches/s ({w1.us_per_mb:,.0f} µs each){extra}"
        out.append(_goal("W1 mb10: >= 8,000 mini-batches/s end to end", fig, w1.mbs_per_s >= 8000))
    if _row(rows, "W1", "mb10", "pool"):
        out.append(_ratio_goal(rows, ("W1", "mb10"), "pool", 2.5))
    if _row(rows, "W2", "mb100", "pool"):
        out.append(_ratio_goal(rows, ("W2", "mb100"), "pool", 1.03))
        out.extend(_efficiency(rows))
    if _row(rows, "W3", "mb50", "pool"):
        out.append(_ratio_goal(rows, ("W3", "mb50"), "pool", 2.0))
    out.extend(
        _ratio_goal(rows, ("W4", kind), "pool", limit)
        for kind, limit in (("csv", 1.1), ("parquet", 1.05))
        if _row(rows, "W4", kind, "pool")
    )
    w5 = _row(rows, "W5", "10items", "prsd-run")
    if w5 is not None and w5.wall_s is not None:
        first = w5.first_run_s
        out.append(
            _goal(
                "W5: first run() <= 0.15 s after prsd run starts",
                "-" if first is None else f"{first:.2f} s",
                None if first is None else first <= 0.15,
            )
        )
        out.append(
            _goal("W5: 10-item job finished <= 1.5 s", f"{w5.wall_s:.2f} s", w5.wall_s <= 1.5)
        )
    out.extend(_special_goals(special))
    own_rss = [r.prsd_rss_mb for r in rows if r.prsd_rss_mb is not None]
    if own_rss:
        peak = max(own_rss)
        out.append(_goal("prsd's own processes <= 150 MB peak RSS", f"{peak:.0f} MB", peak <= 150))
    return out


def _efficiency(rows: list[Row]) -> list[dict[str, Any]]:
    """W2's parallel efficiency per runner: (items x per-item time / 2 workers) / wall,
    the per-item time taken from the sequential runner of the same run."""
    seq = _row(rows, "W2", "mb100", "sequential")
    if seq is None or seq.wall_s is None:
        return []
    ideal = seq.wall_s / 2
    figs = [
        f"{r.runner} {ideal / r.wall_s:.0%}"
        for r in rows
        if (r.workload, r.variant) == ("W2", "mb100") and r.runner != "sequential" and r.wall_s
    ]
    return [_goal("W2: parallel efficiency (ideal / measured)", ", ".join(figs), None)]


def _special_goals(special: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    w6 = special.get("W6")
    if w6:
        for key, limit, goal in (
            ("first_claimable_s", 1.0, "W6: first mini-batch claimable <= 1 s"),
            ("all_planned_s", 30.0, "W6: all planned <= 30 s"),
            ("leader_rss_mb", 200.0, "W6: leader peak RSS <= 200 MB"),
            ("status_max_s", 0.2, "W6: prsctl status <= 0.2 s throughout"),
        ):
            value = w6.get(key)
            fig = "-" if value is None else f"{value}"
            out.append(_goal(goal, fig, None if value is None else value <= limit))
    w7 = special.get("W7")
    if w7:
        per_mb = w7["spool_per_mb"]
        fig = f"{per_mb} on the spool ({w7.get('strace_c_per_mb', '-')} on any path, strace -f -c)"
        out.append(_goal("W7: <= 4 spool operations per mini-batch", fig, per_mb <= 4))
        roles = w7.get("by_role")
        if roles:
            split = ", ".join(
                f"{r} {roles[r]['spool_per_mb']} ({roles[r]['spool_per_task']} per task)"
                for r in ("leader", "agent")
            )
            split += f"; {roles['mini_batches']} mini-batches in {roles['tasks']} tasks"
            both = sum(roles[r]["spool_per_mb"] for r in ("leader", "agent"))
            out.append(_goal("W7: <= 4 per mini-batch, leader and agent daemons", split, both <= 4))
    w8 = special.get("W8")
    if w8:
        by_n = {s["agents"]: s for s in w8["summary"]}
        one, four = by_n.get(1, {}).get("mbs_per_s"), by_n.get(4, {}).get("mbs_per_s")
        fig = ", ".join(
            f"{n}: {s['mbs_per_s']}"
            + (f" (CPU {100 * s['machine_busy']:.0f}% busy)" if s.get("machine_busy") else "")
            for n, s in by_n.items()
        )
        grows = None if one is None or four is None else four > one
        out.append(_goal("W8: throughput grows from 1 to 4 agents (mini-batches/s)", fig, grows))
        doubles = sum(s["double_claims"] for s in w8["summary"])
        out.append(_goal("W8: double claims 0", str(doubles), doubles == 0))
    out += w9_goals(special.get("W9"))
    return out


def w9_goals(w9: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Issue 17's fleet goals from W9's summary (medians per system and N)."""
    if not w9:
        return []
    by = {(s["system"], s["agents"]): s for s in w9["summary"]}
    ns = sorted({n for (system, n) in by if system == "prsd"})
    out: list[dict[str, Any]] = []

    def eff(system: str, n: int) -> float | None:
        value = by.get((system, n), {}).get("efficiency")
        return None if value is None else float(value)

    for system, n, limit in (("prsd", 32, 0.90), ("prsd", 8, 0.95), ("prsd-sshfs", 8, 0.80)):
        e = eff(system, n)
        goal = f"W9: {system} efficiency >= {limit:.0%} at N = {n}"
        out.append(
            _goal(
                goal, "not measured" if e is None else f"{e:.1%}", None if e is None else e >= limit
            )
        )
    for other in ("dask", "ray"):
        pairs: list[tuple[int, float, float]] = []
        for n in ns:
            a, b = eff("prsd", n), eff(other, n)
            if a is not None and b is not None:
                pairs.append((n, a, b))
        fig = ", ".join(f"N={n}: {a:.0%} vs {b:.0%}" for n, a, b in pairs) or "not measured"
        met = None if not pairs else all(a > b for _, a, b in pairs)
        out.append(_goal(f"W9: prsd ahead of {other} at every N", fig, met))
    if ns:
        top = by[("prsd", ns[-1])]
        for key, limit, who in (
            ("leader_us_per_mb", 30, "leader"),
            ("agents_us_per_mb", 150, "all agents"),
        ):
            value = top.get(key)
            fig = "-" if value is None else f"{value} µs at N = {ns[-1]}"
            goal = f"W9: {who} CPU <= {limit} µs per mini-batch"
            out.append(_goal(goal, fig, None if value is None else value <= limit))
    doubles = sum(s.get("double_claims", 0) for s in w9["summary"])
    out.append(_goal("W9: double claims 0", str(doubles), doubles == 0))
    return out
