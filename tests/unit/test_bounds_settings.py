"""The bounds' settings: the job key's range and the agent's PRSD_* values (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from prsd.agent.context import JobContext
from prsd.errors import JobSpecError
from prsd.jobspec.model import InputSpec, JobSpec
from prsd.jobspec.values import MAX_CONCURRENCY_PER_INSTANCE, as_concurrency, as_memory_size
from prsd.jobspec.yamlsafe import Doc, Site
from prsd.spool.layout import JobLayout
from prsd.tunables import (
    MAX_WORKERS_PER_NODE,
    max_captured_output_bytes,
    max_result_bytes,
    max_result_rows,
    max_workers_per_node,
    parse_size,
    worker_memory_limit,
    worker_memory_max_bytes,
)

SITE = Site(Doc(Path("/job/job.yaml"), {}, {"resources.max_concurrency_per_instance": 7}), "k")


@pytest.mark.parametrize("value", [1, "4", 1024.0])
def test_concurrency_within_the_bound_is_read(value: object) -> None:
    """1 to 1024 workers per node are accepted."""
    assert 1 <= as_concurrency(value, SITE) <= MAX_CONCURRENCY_PER_INSTANCE


@pytest.mark.parametrize("value", [0, 1025, 100_000, 1_000_000_000, "1e12", True])
def test_concurrency_out_of_bounds_names_the_key_and_the_bound(value: object) -> None:
    """An absurd worker count is a JobSpecError naming the bound."""
    with pytest.raises(JobSpecError) as caught:
        as_concurrency(value, SITE)
    assert "from 1 to 1024" in caught.value.one_line()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1048576", 1 << 20),
        ("200M", 200 << 20),
        ("200MB", 200 << 20),
        ("1GiB", 1 << 30),
        ("64k", 64 << 10),
        ("x", None),
        ("-1", None),
        ("1.5G", None),
    ],
)
def test_parse_size(text: str, expected: int | None) -> None:
    """Sizes are whole numbers with an optional 1024-based unit."""
    assert parse_size(text) == expected


def test_defaults_and_overrides() -> None:
    """Defaults protect a small machine; settable values win; unreadable ones are ignored."""
    assert worker_memory_max_bytes({}) is None
    assert worker_memory_max_bytes({"PRSD_WORKER_MEMORY_MAX": "2G"}) == 2 << 30
    assert 1 <= max_workers_per_node({}) <= MAX_WORKERS_PER_NODE
    assert max_workers_per_node({"PRSD_MAX_WORKERS_PER_NODE": "3"}) == 3
    assert max_workers_per_node({"PRSD_MAX_WORKERS_PER_NODE": "lots"}) == max_workers_per_node({})
    assert max_result_rows({}) == 10_000_000
    assert max_result_bytes({}) == 256 << 20
    assert max_result_bytes({"PRSD_MAX_RESULT_BYTES": "1MiB"}) == 1 << 20
    assert max_captured_output_bytes({}) == 64 << 20
    assert max_captured_output_bytes({"PRSD_MAX_CAPTURED_OUTPUT": "0"}) == 64 << 20


@pytest.mark.parametrize(
    ("value", "expected"),
    [("200M", 200 << 20), ("8G", 8 << 30), (1 << 30, 1 << 30), ("512MiB", 512 << 20)],
)
def test_memory_key_reads_sizes(value: object, expected: int) -> None:
    """resources.max_memory_per_worker takes 1024-based sizes or bytes."""
    assert as_memory_size(value, SITE) == expected


@pytest.mark.parametrize("value", ["lots", "1M", 0, True, "-5G", None])
def test_memory_key_refuses_non_sizes_and_tiny_limits(value: object) -> None:
    """Not a size, or under 64 MiB, is a JobSpecError."""
    with pytest.raises(JobSpecError):
        as_memory_size(value, SITE)


def test_the_tighter_memory_limit_wins() -> None:
    """The job's key and the node's setting: the smaller one applies; none when neither."""
    assert worker_memory_limit(None, None) is None
    assert worker_memory_limit(1 << 30, None) == 1 << 30
    assert worker_memory_limit(None, 2 << 30) == 2 << 30
    assert worker_memory_limit(4 << 30, 2 << 30) == 2 << 30


def test_an_absurd_spec_is_clamped_to_the_slot_cap() -> None:
    """A spec.json that bypassed the bound (an older spool) still runs at most slot_cap workers."""
    spec = JobSpec(
        name="j",
        job_dir="/j",
        input=InputSpec(paths=("/j/data",)),
        mini_batch_size=1,
        code_dir="/j/code",
        entry_script="score.py",
        max_concurrency_per_instance=1_000_000_000,
    )
    ctx = JobContext(JobLayout(Path("/spool/jobs/j"), "j"), spec, "n1", 0, "files", slot_cap=4)
    assert ctx.wanted_workers() == 1_000_000_000
    assert ctx.workers() == 4
