"""Which splitter plans a job's input: a table from input format to planner.

Every planner yields :class:`~prsd.storage.records.MiniBatch` objects numbered from
0 in input order, lazily, so the first task is written while the input is still
being read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prsd.errors import InputError
from prsd.jobspec import JobSpec
from prsd.leader.split import SkipReporter, iter_input_files, plan_file_batches
from prsd.storage.records import MiniBatch

Planner = Callable[[JobSpec, SkipReporter | None], Iterator[MiniBatch]]


def _plan_files(spec: JobSpec, on_skip: SkipReporter | None) -> Iterator[MiniBatch]:
    return plan_file_batches(iter_input_files(spec.input.paths, on_skip), spec.mini_batch_size)


PLANNERS: dict[str, Planner] = {"files": _plan_files}


def input_kind(spec: JobSpec) -> str:
    """The loader the workers use for this job's mini-batches."""
    return spec.input.format


def plan_mini_batches(spec: JobSpec, on_skip: SkipReporter | None = None) -> Iterator[MiniBatch]:
    """The job's mini-batches, in input order.

    Raises:
        InputError: no planner handles this input.
    """
    planner = PLANNERS.get(spec.input.format)
    if planner is None:
        raise InputError(f"input_format {spec.input.format!r} has no splitter")
    return planner(spec, on_skip)
