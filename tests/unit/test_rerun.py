"""Retry planning by content: the output of a chain of retries equals a clean run's."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from prsd.errors import JobSpecError
from prsd.inputsplit.split import plan_file_batches
from prsd.jobspec.overrides import apply_overrides, parse_override
from prsd.retryplan.plan import (
    Kept,
    PlanNotes,
    Reuse,
    Run,
    items_digest,
    number_runs,
    payload_identity,
    plan_file_units,
    plan_payload_units,
)
from prsd.spool.retryrecords import RetryOrder, RetryPlan
from prsd.wire.records import MiniBatch


def _kept(ref: int, items: list[str], since: int = 0) -> Kept:
    return Kept(ref, items[0], len(items), items_digest(items), since)


def _never(path: str, since: int) -> bool:
    return False


def test_deleting_bad_files_shifts_nothing() -> None:
    """Three bad files deleted: only the two failed mini-batches' survivors run again."""
    files = [f"/d/f{i:02d}" for i in range(12)]
    mbs = [files[i : i + 3] for i in range(0, 12, 3)]  # 0-2, 3-5, 6-8, 9-11
    kept = {mbs[i][0]: _kept(i, mbs[i]) for i in (0, 2)}  # 1 and 3 failed
    now = [f for f in files if f not in ("/d/f04", "/d/f09", "/d/f10")]
    units = list(plan_file_units(now, kept, 3, _never))
    assert units == [
        Reuse(0),
        Run(MiniBatch(-1, ["/d/f03", "/d/f05"], 2)),
        Reuse(2),
        Run(MiniBatch(-1, ["/d/f11"], 1)),
    ]


def test_a_deleted_or_edited_file_voids_its_result() -> None:
    """A kept result that lost a file, or whose file changed, runs again whole."""
    files = [f"/d/f{i}" for i in range(6)]
    kept = {"/d/f0": _kept(0, files[:3], since=10), "/d/f3": _kept(1, files[3:], since=10)}
    notes = PlanNotes()
    units = list(
        plan_file_units([*files[:1], *files[2:]], kept, 10, lambda p, s: p == "/d/f4", notes)
    )
    assert units == [Run(MiniBatch(-1, ["/d/f0", "/d/f2", "/d/f3", "/d/f4", "/d/f5"], 5))]
    assert notes.voided == ["/d/f0", "/d/f3"] and notes.kept == 0


def test_an_added_file_inside_a_result_voids_it_and_runs_in_order() -> None:
    """A new file between kept inputs: that result runs again, in input order."""
    kept = {"/d/a": _kept(0, ["/d/a", "/d/c"]), "/d/d": _kept(1, ["/d/d"])}
    units = list(plan_file_units(["/d/a", "/d/b", "/d/c", "/d/d"], kept, 2, _never))
    assert units == [
        Run(MiniBatch(-1, ["/d/a", "/d/b"], 2)),
        Run(MiniBatch(-1, ["/d/c"], 1)),
        Reuse(1),
    ]


def test_numbering_records_the_order() -> None:
    """Runs are numbered from 0; the order interleaves kept results as -1-ref."""
    order: list[int] = []
    units: list[Run | Reuse] = [
        Reuse(3),
        Run(MiniBatch(-1, ["x"], 1)),
        Reuse(0),
        Run(MiniBatch(-1, ["y"], 1)),
    ]
    got = list(number_runs(units, order))
    assert [m.index for m in got] == [0, 1] and order == [-4, 0, -1, 1]


def test_tables_match_by_payload_and_groups_by_key() -> None:
    """A byte range is kept if identical and its file unchanged; a group by its key."""
    a = {"path": "/t/a.csv", "start": 0, "end": 10}
    b = {"path": "/t/b.csv", "start": 0, "end": 10}
    group = {"path": "/spool/jobs/old/partitions/1.arrow", "rows": 3}
    ids = [payload_identity(a, None), payload_identity(b, None)]
    kept = {
        ids[0]: Kept(0, ids[0], 1, ids[0], 5, ("/t/a.csv",)),
        ids[1]: Kept(1, ids[1], 1, ids[1], 5, ("/t/b.csv",)),
    }
    gid = payload_identity({"path": "elsewhere", "rows": 3}, {"store": "s1"})
    kept[gid] = Kept(2, gid, 1, gid, 5)
    mbs = [MiniBatch(0, a), MiniBatch(1, b), MiniBatch(2, group, 3, {"store": "s1"})]
    units = list(plan_payload_units(mbs, kept, lambda p, s: p == "/t/b.csv"))
    assert units == [Reuse(0), Run(mbs[1]), Reuse(2)]


def test_plan_and_order_files_round_trip() -> None:
    """retry.json and retry_order.json survive their encodings; the summary names removals."""
    plan = RetryPlan("old", "files", ("/d/a.txt",), "c1", "c0", ("x=1",))
    assert RetryPlan.decode(plan.encode()) == plan
    order = RetryOrder([0, -1], 1, [], 0, ["/d/a.txt", "/d/b.txt"], 2)
    assert RetryOrder.decode(order.encode()) == order
    assert "2 failed input files were removed: a.txt, b.txt" in order.summary("old")


# --- property: random inputs, failures, edits, fixes ---------------------------------


@dataclass
class World:
    """Files with content versions and edit times; which (name, version) the script fails."""

    rng: random.Random
    files: dict[str, int] = field(default_factory=dict)  # name -> version
    edited_at: dict[str, int] = field(default_factory=dict)
    bad: set[str] = field(default_factory=set)
    clock: int = 0

    def row(self, name: str) -> str:
        return f"{name}@{self.files[name]}"

    def names(self) -> list[str]:
        return sorted(self.files)

    def tick(self) -> int:
        self.clock += 1
        return self.clock

    def edit(self) -> None:
        """Delete, add and edit a few files; fix some bad ones, break a few new ones."""
        names = self.names()
        for name in self.rng.sample(names, k=min(len(names), self.rng.randint(0, 3))):
            del self.files[name]
            self.bad.discard(name)
        for _ in range(self.rng.randint(0, 3)):
            name = f"/in/{self.rng.randrange(1000):03d}{self.rng.choice('abc')}"
            if name not in self.files:
                self.files[name] = 0
                self.edited_at[name] = self.tick()
        for name in self.rng.sample(self.names(), k=min(len(self.files), self.rng.randint(0, 2))):
            self.files[name] += 1
            self.edited_at[name] = self.tick()
        self.bad = {b for b in self.bad if self.rng.random() < 0.5}

    def changed(self, path: str, since: int) -> bool:
        return self.edited_at.get(path, 0) > since


@dataclass
class Result:
    kept: Kept
    rows: list[str]


def _run_batch(world: World, items: list[str]) -> list[str] | None:
    return None if any(i in world.bad for i in items) else [world.row(i) for i in items]


def _bisect(world: World, items: list[str], out: list[tuple[list[str], list[str]]]) -> None:
    """The succeeded halves of a failed mini-batch, as bisection finds them."""
    if len(items) < 2:
        return
    mid = (len(items) + 1) // 2
    for half in (items[:mid], items[mid:]):
        rows = _run_batch(world, half)
        if rows is not None:
            out.append((half, rows))
        else:
            _bisect(world, half, out)


def _job(
    world: World, units: list[Run | Reuse], earlier: list[Result], bisect: bool
) -> tuple[list[str], list[Result]]:
    """Run a job's units; returns its assembled output and everything a retry may keep."""
    since = world.tick()
    output: list[str] = []
    own: list[tuple[list[str], list[str]]] = []
    for unit in units:
        if isinstance(unit, Reuse):
            output.extend(earlier[unit.ref].rows)
            continue
        items = list(unit.mb.payload)
        rows = _run_batch(world, items)
        if rows is not None:
            output.extend(rows)
            own.append((items, rows))
        elif bisect:
            _bisect(world, items, own)
    results = [Result(_kept(0, items, since), rows) for items, rows in own]
    results += earlier
    return output, [Result(_renumber(r.kept, i), r.rows) for i, r in enumerate(results)]


def _renumber(k: Kept, ref: int) -> Kept:
    return Kept(ref, k.first, k.count, k.digest, k.since_ns, k.paths)


def _table(results: list[Result]) -> dict[str, Kept]:
    table: dict[str, Kept] = {}
    for r in results:
        table.setdefault(r.kept.first, r.kept)
    return table


@pytest.mark.parametrize("seed", range(40))
def test_retries_always_give_a_clean_runs_output(seed: int) -> None:
    """Random inputs, failures, edits and fixes: every retry's output is exact."""
    rng = random.Random(seed)
    world = World(rng)
    for i in range(rng.randint(0, 40)):
        world.files[f"/in/{i * 25:03d}"] = 0
    world.bad = {n for n in world.files if rng.random() < 0.15}
    size = rng.randint(1, 6)
    bisect = rng.random() < 0.5
    first = [Run(mb) for mb in plan_file_batches(world.names(), size)]
    _, results = _job(world, list(first), [], bisect)
    for _ in range(4):
        world.edit()
        size = rng.randint(1, 6)
        units = list(plan_file_units(world.names(), _table(results), size, world.changed))
        ran = [i for u in units if isinstance(u, Run) for i in u.mb.payload]
        output, results = _job(world, units, results, bisect)
        failed = {i for u in units if isinstance(u, Run) for i in u.mb.payload
                  if _run_batch(world, list(u.mb.payload)) is None}  # fmt: skip
        assert output == [world.row(n) for n in world.names() if n not in failed]
        assert len(ran) == len(set(ran))
    world.bad = set()
    units = list(plan_file_units(world.names(), _table(results), size, world.changed))
    output, _ = _job(world, units, results, bisect)
    assert output == [world.row(n) for n in world.names()]


def test_unchanged_input_runs_only_what_failed() -> None:
    """No edits: exactly the failed files run again (bisection keeps the good halves)."""
    world = World(random.Random(7))
    world.files = {f"/in/{i:03d}": 0 for i in range(40)}
    world.bad = {"/in/005", "/in/017", "/in/018"}
    units = [Run(mb) for mb in plan_file_batches(world.names(), 8)]
    _, results = _job(world, list(units), [], bisect=True)
    again = list(plan_file_units(world.names(), _table(results), 8, world.changed))
    assert [u.mb.payload for u in again if isinstance(u, Run)] == [
        ["/in/005"],
        ["/in/017", "/in/018"],
    ]


# --- --set ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("retry_settings.timeout=120", {"retry_settings": {"timeout": 120}, "task": {"x": 1}}),
        ("task.program_arguments=--x 1", {"task": {"x": 1, "program_arguments": "--x 1"}}),
        ("task.x=true", {"task": {"x": True}}),
        ("task.x=[a, b]", {"task": {"x": ["a", "b"]}}),
        ("task.x=", {"task": {"x": ""}}),
        ("task.x=a: b: c", {"task": {"x": "a: b: c"}}),
    ],
)
def test_set_overrides(text: str, expected: dict[str, object]) -> None:
    """az ml's --set: dotted paths, YAML-typed values, missing mappings created."""
    data = {"task": {"x": 1}}
    got = apply_overrides(data, [parse_override(text)])
    assert {k: v for k, v in got.items() if k in expected} == expected
    assert data == {"task": {"x": 1}}  # the input is never changed


def test_set_list_items_and_errors() -> None:
    """[i] indexes a list; bad paths are one clear error naming the key."""
    data = {"input_data": ["/a", "/b"], "name": "n"}
    assert apply_overrides(data, [parse_override("input_data[1]=/c")])["input_data"] == ["/a", "/c"]
    for text, words in [
        ("input_data[2]=/x", "has 2 items"),
        ("name.first=x", "not a mapping"),
        ("name[0]=x", "not a list"),
        ("novalue", "KEY=VALUE"),
        ("a..b=1", "is not a path"),
    ]:
        with pytest.raises(JobSpecError, match=words):
            apply_overrides(data, [parse_override(text)])
