"""Which waiting steps a failure, a skip or a cancel skips, and why (pure)."""

from __future__ import annotations

from prsd.pipeline.desk import plan_skips
from prsd.pipeline.record import PipelineRecord, StepRecord, parse_record
from prsd.pipeline.view import StepView

DEPS = {"a": (), "b": ("a",), "c": ("b",), "d": (), "e": ("d",)}


def _record(go_on: bool) -> PipelineRecord:
    steps = {n: StepRecord(n, "command", f"p-{n}", d) for n, d in DEPS.items()}
    return PipelineRecord("p", "p", "/f.yml", steps, continue_on_step_failure=go_on)


def _views(**states: str) -> dict[str, StepView]:
    return {n: StepView(n, "command", f"p-{n}", states.get(n, "Waiting")) for n in DEPS}


def test_by_default_a_failure_skips_every_waiting_step() -> None:
    skips = plan_skips(_record(False), _views(a="Failed", d="Running"), canceled=False)
    why = "not run: step a ended Failed (settings.continue_on_step_failure is false)"
    assert skips == {"b": why, "c": why, "e": why}


def test_continuing_skips_only_what_depends_on_the_failure() -> None:
    skips = plan_skips(_record(True), _views(a="Failed", d="Running"), canceled=False)
    assert skips == {
        "b": "not run: it depends on step a, which ended Failed",
        "c": "not run: it depends on step a, which ended Failed",
    }
    later = plan_skips(_record(True), _views(a="Completed", b="Skipped"), canceled=False)
    assert later == {"c": "not run: it depends on step b, which ended Skipped"}


def test_nothing_failed_nothing_skipped_and_cancel_skips_all_waiting() -> None:
    assert plan_skips(_record(False), _views(a="Completed", d="Running"), canceled=False) == {}
    skips = plan_skips(_record(True), _views(a="Running"), canceled=True)
    assert set(skips) == {"b", "c", "d", "e"}
    assert set(skips.values()) == {"not run: the pipeline was canceled"}


def test_a_record_naming_unsafe_things_is_refused() -> None:
    good = _record(False).to_json()
    assert parse_record(good).steps["c"].deps == ("b",)
    for bad in (
        good.replace(b'"p-a"', b'"../etc"'),
        good.replace(b'"kind": "command"', b'"kind": "sweep"', 1),
        good.replace(b'"deps": [\n    "a"\n   ]', b'"deps": [\n    "zz"\n   ]', 1),
        b"[]",
    ):
        try:
            parse_record(bad)
        except ValueError:
            continue
        raise AssertionError(bad)
