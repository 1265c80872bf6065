"""The order in which a node tries pending task names (``prsd.spool.claim.claim_order``).

Two promises: nodes listing together try different names first (the spread), and no
name waits behind newer ones for more than one claim of a node (the age order that
the leader's shrinking tail tasks rely on). The order of a rotation, which starts a
node in the middle of the listing and leaves the oldest names for last, breaks the
second.
"""

from __future__ import annotations

from pathlib import Path

from prsd.spool.claim import CLAIM_SPREAD, claim_order

NODES = [f"a{i}" for i in range(8)]


def _listing(count: int) -> list[Path]:
    return [Path(f"pending/000000/{i:09d}.a1.e1") for i in range(count)]


def _newer_ahead(order: list[Path]) -> int:
    """The most names newer than some name that are tried before it."""
    worst = 0
    for at, path in enumerate(order):
        worst = max(worst, sum(1 for p in order[:at] if p.name > path.name))
    return worst


def test_every_name_is_tried_once_and_none_waits_behind_more_than_one_newer() -> None:
    for count in (0, 1, 2, 3, 5, 16, 17, 64):
        listing = _listing(count)
        for node in NODES:
            order = claim_order(node, listing)
            assert sorted(order) == listing, (node, count)
            assert _newer_ahead(order) <= 1, (node, count, [p.name[:9] for p in order])
            assert order[1:] == [p for p in listing if p != order[0]]


def test_the_first_try_is_among_the_oldest_names() -> None:
    listing = _listing(64)
    for node in NODES:
        assert listing.index(claim_order(node, listing)[0]) < CLAIM_SPREAD


def test_nodes_listing_together_try_different_names_first() -> None:
    listing = _listing(64)
    firsts = {claim_order(node, listing)[0] for node in NODES}
    # crc32 of a0..a7 modulo 16: 5, 3, 9, 15, 12, 10, 0, 6 - eight different names.
    assert len(firsts) == len(NODES)


def test_a_short_listing_still_spreads_the_first_tries() -> None:
    # A short listing (the end of a job) spreads over what there is.
    short = _listing(3)
    firsts = {claim_order(node, short)[0] for node in NODES}
    assert len(firsts) > 1
