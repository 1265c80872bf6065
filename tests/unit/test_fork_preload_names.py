"""Which modules a fork server preloads for an input kind, and how it imports them."""

from __future__ import annotations

import sys

from prsd.worker import forkserver
from prsd.worker.loaders import LOADERS, preloads_for


def test_the_tabular_kinds_preload_what_their_loaders_import() -> None:
    assert preloads_for("csv") == ("pandas",)
    assert preloads_for("jsonl") == ("pandas",)
    assert preloads_for("parquet") == ("pandas", "pyarrow.parquet")
    assert preloads_for("files") == ()
    assert preloads_for("no-such-kind") == ()
    assert {k for k in LOADERS if preloads_for(k)} == {"csv", "jsonl", "parquet"}


def test_a_module_that_fails_to_import_is_skipped_and_the_rest_imported() -> None:
    sys.modules.pop("colorsys", None)
    forkserver._preload(["prsd_no_such_module_for_a_test", "colorsys"])
    assert "colorsys" in sys.modules
    assert "prsd_no_such_module_for_a_test" not in sys.modules


def test_a_preload_that_is_not_a_list_imports_nothing() -> None:
    sys.modules.pop("colorsys", None)
    forkserver._preload("colorsys")
    assert "colorsys" not in sys.modules
