"""A python pin of a patch level (``python=3.7.6``, as Azure's conda files write it) is
met by the node's newest interpreter of the same major.minor, with a note naming both
versions; ``python_mismatch`` governs other minors only (the pure decision)."""

from __future__ import annotations

import pytest

from prsd.envs.interp import Interpreter, choose, same_minor
from prsd.envs.spec import EnvError, Pin

PY3716 = Interpreter("/p/3.7.16/bin/python3.7", (3, 7, 16))
PY3712 = Interpreter("/p/3.7.12/bin/python3.7", (3, 7, 12))
PY3818 = Interpreter("/p/3.8.18/bin/python3.8", (3, 8, 18))
PY3913 = Interpreter("/p/3.9.13/bin/python3.9", (3, 9, 13))


def test_a_patch_pin_uses_the_newest_of_its_minor_and_names_both_versions() -> None:
    chosen, note = choose(Pin((3, 7, 6)), [PY3818, PY3712, PY3716])
    assert chosen == PY3716
    assert note == (
        "python=3.7.6 pinned and this node has no 3.7.6: using 3.7.16, the same 3.7 at "
        "another patch level (/p/3.7.16/bin/python3.7)"
    )


def test_an_older_patch_of_the_minor_is_used_too() -> None:
    chosen, note = choose(Pin((3, 8, 20)), [PY3818, PY3913])
    assert chosen == PY3818
    assert "python=3.8.20 pinned" in note and "using 3.8.18" in note


def test_the_exact_patch_wins_without_a_note() -> None:
    exact = Interpreter("/p/3.7.6/bin/python3.7", (3, 7, 6))
    assert choose(Pin((3, 7, 6)), [PY3716, exact]) == (exact, "")


def test_the_same_minor_is_used_whatever_the_mismatch_mode() -> None:
    for mode in ("error", "warn"):
        assert choose(Pin((3, 7, 6)), [PY3913, PY3716], mode)[0] == PY3716


def test_a_patch_pin_of_a_minor_the_node_lacks_stays_refused() -> None:
    with pytest.raises(EnvError) as info:
        choose(Pin((3, 6, 9)), [PY3716, PY3818])
    assert "no interpreter for python=3.6.9 on this node" in str(info.value)
    assert "3.7.16" in str(info.value)  # what was found is named


def test_warn_still_means_the_nearest_newer_minor() -> None:
    chosen, note = choose(Pin((3, 6, 9)), [PY3818, PY3716], "warn")
    assert chosen == PY3716 and "nearest newer one" in note


def test_minor_and_at_least_pins_are_not_widened() -> None:
    assert same_minor(Pin((3, 7)), [PY3716]) is None
    assert same_minor(Pin((3, 7, 6), at_least=True), [PY3716]) is None
    assert same_minor(Pin((3, 7, 6)), [PY3818]) is None
    with pytest.raises(EnvError):
        choose(Pin((3, 10, 1), at_least=True), [PY3716, PY3818])
