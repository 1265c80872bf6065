"""Splitting file lists: sorted full-path order, streaming, mini-batch numbering, packing."""

from __future__ import annotations

import os
import random
from typing import TYPE_CHECKING

import pytest

from prsd.inputsplit.split import (
    HEAD_FIRST,
    SORT_AT_ONCE,
    UTF8_CHECKED_AT_ONCE,
    iter_files,
    iter_input_files,
    plan_file_batches,
    walk_order,
)
from prsd.leader.plan.packing import (
    GUIDED_SHARE,
    MAX_PEEK,
    MAX_PER_TASK,
    TAIL_MIN_TASK_S,
    UNMEASURED_LOOKAHEAD,
    UNMEASURED_MIN,
    advise,
    fleet_slots,
    peek_for,
    unmeasured_lookahead,
)
from prsd.leader.run.tasks import contiguous_runs

if TYPE_CHECKING:
    from pathlib import Path


def _touch(root: Path, *names: str) -> None:
    for n in names:
        p = root / n
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x")


def test_walk_gives_sorted_full_paths(tmp_path: Path) -> None:
    """The walk equals sorting every full path ('a.txt' before 'a/b', as sorted() says)."""
    names = ["a.txt", "a/b", "a/c/d", "a-b/x", "b", "A", "a/ba", "z/y/x/w"]
    _touch(tmp_path, *names)
    walked = list(iter_files(str(tmp_path)))
    assert walked == sorted(str(tmp_path / n) for n in names)


def test_single_file_input(tmp_path: Path) -> None:
    """A file given as input is itself the whole listing."""
    _touch(tmp_path, "one.png")
    assert list(iter_files(str(tmp_path / "one.png"))) == [str(tmp_path / "one.png")]


def test_symlinks_inside_kept_outside_skipped(tmp_path: Path) -> None:
    """A link to a file inside the input is listed; links out of it or to folders are not."""
    root = tmp_path / "in"
    _touch(root, "real.txt", "sub/f.txt")
    _touch(tmp_path, "secret.txt")
    os.symlink(root / "real.txt", root / "link-in.txt")
    os.symlink(tmp_path / "secret.txt", root / "link-out.txt")
    os.symlink(root / "sub", root / "link-dir")
    skipped: list[str] = []
    got = list(iter_files(str(root), lambda p, why: skipped.append(p)))
    assert got == [str(root / "link-in.txt"), str(root / "real.txt"), str(root / "sub/f.txt")]
    assert sorted(skipped) == [str(root / "link-dir"), str(root / "link-out.txt")]


def test_listing_streams(tmp_path: Path) -> None:
    """The first file is produced before later folders are read (they may not exist yet)."""
    _touch(tmp_path, "a/1", "b/2")
    it = iter_files(str(tmp_path))
    assert next(it) == str(tmp_path / "a/1")
    (tmp_path / "b" / "3").write_bytes(b"x")
    assert list(it) == [str(tmp_path / "b/2"), str(tmp_path / "b/3")]


def test_several_roots_in_given_order(tmp_path: Path) -> None:
    """Input roots are listed one after the other, in the order the spec gives."""
    _touch(tmp_path, "z/1", "a/1")
    got = list(iter_input_files([str(tmp_path / "z"), str(tmp_path / "a")]))
    assert got == [str(tmp_path / "z/1"), str(tmp_path / "a/1")]


@pytest.mark.parametrize(("n", "size", "sizes"), [(0, 3, []), (7, 3, [3, 3, 1]), (6, 3, [3, 3])])
def test_plan_batches(n: int, size: int, sizes: list[int]) -> None:
    """Mini-batches hold `size` files, the last one the rest; ids count from 0."""
    batches = list(plan_file_batches((f"/f{i}" for i in range(n)), size))
    assert [len(b.payload) for b in batches] == sizes
    assert [b.index for b in batches] == list(range(len(sizes)))
    assert [p for b in batches for p in b.payload] == [f"/f{i}" for i in range(n)]
    assert all(b.items == len(b.payload) for b in batches)


def test_plan_resume_skips_earlier_batches() -> None:
    """A resumed split starts at a mini-batch index with the same boundaries."""
    full = list(plan_file_batches((f"/f{i}" for i in range(10)), 3))
    resumed = list(plan_file_batches((f"/f{i}" for i in range(10)), 3, start=2))
    assert resumed == full[2:]


def test_plan_rejects_zero_size() -> None:
    """A mini-batch size below 1 is a programming error."""
    with pytest.raises(ValueError, match="at least 1"):
        list(plan_file_batches(["/a"], 0))


@pytest.mark.parametrize(
    ("measured", "unclaimed", "waited", "per_task", "may_write"),
    [
        (None, 0, 0.0, 1, True),
        (None, UNMEASURED_MIN - 1, 0.1, 1, True),
        (None, UNMEASURED_MIN, 0.1, 1, False),
        (None, UNMEASURED_MIN, 5.0, 1, True),
        (1.0, 10_000, 0.0, 1, True),
        (0.005, 0, 0.0, 100, True),
        (0.02, 0, 0.0, 25, True),
        (1e-7, 0, 0.0, MAX_PER_TASK, True),
    ],
)
def test_packing_advice(
    measured: float | None, unclaimed: int, waited: float, per_task: int, may_write: bool
) -> None:
    """Tiny mini-batches are packed; unmeasured ones travel alone and split waits a little."""
    advice = advise(measured_mb_s=measured, unclaimed_tasks=unclaimed, waited_s=waited)
    assert (advice.per_task, advice.may_write) == (per_task, may_write)


def _tail_sizes(measured: float, total: int, slots: int) -> list[int]:
    sizes = []
    remaining = total
    while remaining > 0:
        advice = advise(
            measured_mb_s=measured,
            unclaimed_tasks=0,
            waited_s=0.0,
            remaining=remaining,
            slots=slots,
        )
        sizes.append(advice.per_task)
        remaining -= advice.per_task
    return sizes


def test_tail_tasks_shrink_as_the_plan_runs_out() -> None:
    """Guided self-scheduling at the end: a task holds at most remaining / (2 x slots),
    and no less than TAIL_MIN_TASK_S of work while that much remains."""
    sizes = _tail_sizes(0.02, 1000, 8)
    assert sizes[0] == 25  # the time target: 0.5 s of 20 ms mini-batches
    assert sizes == sorted(sizes, reverse=True)  # never growing towards the end
    floor = round(TAIL_MIN_TASK_S / 0.02)  # 5 mini-batches of 20 ms
    assert floor == 5
    assert sizes[-9:-1] == [floor] * 8  # the last ones: 0.1 s of work each, not one
    assert 1 <= sizes[-1] <= floor  # what is left
    assert sum(sizes) == 1000
    # Without the floor it took 84 tasks, the last 16 of one mini-batch each.
    assert len(sizes) == 64
    # Unknown remaining (more than the look-ahead): the time target alone.
    far = advise(measured_mb_s=0.02, unclaimed_tasks=0, waited_s=0.0, remaining=None, slots=8)
    assert far.per_task == 25
    # Enough remaining for every slot: the time target is not cut.
    near = 25 * GUIDED_SHARE * 8
    assert advise(measured_mb_s=0.02, unclaimed_tasks=0, waited_s=0.0, remaining=near, slots=8) == (
        advise(measured_mb_s=0.02, unclaimed_tasks=0, waited_s=0.0, remaining=None, slots=8)
    )


def test_tail_floor_never_exceeds_what_remains_or_the_target() -> None:
    """The last task holds what is left; mini-batches of TAIL_MIN_TASK_S or more go alone
    at the tail; the floor is never above the time target."""
    last = advise(measured_mb_s=0.02, unclaimed_tasks=0, waited_s=0.0, remaining=2, slots=8)
    assert last.per_task == 2
    assert _tail_sizes(0.02, 3, 8) == [3]
    slow = _tail_sizes(0.2, 40, 8)  # 0.2 s each: two to a task at most, one at the tail
    assert max(slow) == 2 and slow[-16:] == [1] * 16 and sum(slow) == 40
    tiny = _tail_sizes(1e-7, 5000, 2)  # the floor would be MAX_PER_TASK: the tail is
    assert set(tiny) == {MAX_PER_TASK} | {5000 % MAX_PER_TASK}  # the target alone


@pytest.mark.parametrize(
    ("slots", "lookahead"),
    [(1, UNMEASURED_MIN), (4, UNMEASURED_MIN), (8, 16), (20, 40), (64, UNMEASURED_LOOKAHEAD)],
)
def test_unmeasured_lookahead_follows_the_slots(slots: int, lookahead: int) -> None:
    """Unmeasured, the split stays two single-mini-batch tasks per slot ahead (8 to 64)."""
    assert unmeasured_lookahead(slots) == lookahead
    below = advise(measured_mb_s=None, unclaimed_tasks=lookahead - 1, waited_s=0.1, slots=slots)
    at = advise(measured_mb_s=None, unclaimed_tasks=lookahead, waited_s=0.1, slots=slots)
    assert (below.may_write, at.may_write) == (True, False)


def test_peek_for_covers_exactly_where_the_tail_rule_bites() -> None:
    assert peek_for(None, 8) == 0  # unmeasured: one per task anyway
    assert peek_for(0.02, 8) == 25 * GUIDED_SHARE * 8
    assert peek_for(1e-7, 10_000) == MAX_PEEK  # bounded memory for huge fleets


@pytest.mark.parametrize(
    ("nodes", "concurrency", "instances", "slots"),
    [
        ([], None, None, 1),  # nobody alive yet: at least one
        ([2, 2, 2], None, None, 6),
        ([8, 8], 2, None, 4),  # max_concurrency_per_instance caps each node
        ([8, 2, 4], None, 2, 12),  # instance_count: the two largest nodes
    ],
)
def test_fleet_slots(
    nodes: list[int], concurrency: int | None, instances: int | None, slots: int
) -> None:
    assert fleet_slots(nodes, concurrency, instances) == slots


def test_contiguous_runs() -> None:
    """Indices group into runs of consecutive numbers."""
    assert contiguous_runs([1, 2, 3, 7, 8, 10]) == [[1, 2, 3], [7, 8], [10]]
    assert contiguous_runs([]) == []


@pytest.mark.parametrize("n", [0, 5, SORT_AT_ONCE, SORT_AT_ONCE + 1, 3 * SORT_AT_ONCE + 7])
def test_walk_order_is_the_sorted_order_at_every_size(n: int) -> None:
    """Big folders yield a head picked before the full sort; the order is the same."""
    rng = random.Random(n)
    names = [f"{rng.randrange(10**9):09d}-{i}.txt" for i in range(n)]
    expected = sorted(names)
    assert list(walk_order(list(names))) == expected
    folders = set(names[::7])
    key = lambda name: name + "/" if name in folders else name
    assert list(walk_order(list(names), key)) == sorted(names, key=key)


def test_walk_order_plans_before_sorting_a_big_folder() -> None:
    """The first names come before the list is sorted (the list is still unsorted then)."""
    names = [f"{i:07d}" for i in range(SORT_AT_ONCE * 2)]
    random.Random(1).shuffle(names)
    order = walk_order(names)
    head = [next(order) for _ in range(HEAD_FIRST)]
    assert head == [f"{i:07d}" for i in range(HEAD_FIRST)]
    assert names != sorted(names)  # not sorted yet: the head came from a selection
    assert next(order) == f"{HEAD_FIRST:07d}"
    assert names == sorted(names)


def test_names_that_are_not_utf8_are_skipped_among_many_files(tmp_path: Path) -> None:
    """The listing checks names for UTF-8 a few thousand at a time: a bad name in any
    group (a file or a folder) is reported and left out; every other file is planned."""
    names = [f"f{i:05d}" for i in range(2 * UTF8_CHECKED_AT_ONCE + 10)]
    _touch(tmp_path, *names)
    root = os.fsencode(tmp_path)
    os.close(os.open(root + b"/f05000\xff", os.O_CREAT | os.O_WRONLY))  # in the 2nd group
    os.mkdir(root + b"/d\xfe")
    os.close(os.open(root + b"/d\xfe/inner", os.O_CREAT | os.O_WRONLY))
    skipped: list[tuple[str, str]] = []
    got = list(iter_files(str(tmp_path), lambda p, why: skipped.append((p, why))))
    assert got == [str(tmp_path / n) for n in sorted(names)]
    assert sorted(skipped) == [
        (f"{tmp_path}/d\\xfe", "the name is not valid UTF-8"),
        (f"{tmp_path}/f05000\\xff", "the name is not valid UTF-8"),
    ]
