"""Everything one node needs to run workers for one job: paths, hello frame, environment."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prsd.spool.layout import JobLayout, process_name
from prsd.spool.opwatch import OpWatch
from prsd.tunables import (
    init_grace_s,
    max_result_bytes,
    max_result_rows,
    max_workers_per_node,
)
from prsd.wire.hello import Hello
from prsd.worker.launch import worker_env

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.agent.forks import ForkServer
    from prsd.jobspec import JobSpec


@dataclass(frozen=True)
class ProcessPaths:
    """The files of one worker (docs/logs.md)."""

    stdout: Path
    stderr: Path
    error: Path
    entry_log: Path
    log_dir: Path
    sys_log: Path
    profile: Path
    working_dir: Path


@dataclass(frozen=True)
class JobContext:
    """One job as seen by one node."""

    layout: JobLayout
    spec: JobSpec
    node_id: str
    gpu_count: int
    kind: str

    @property
    def job_id(self) -> str:
        return self.layout.job_id

    slot_cap: int = dataclasses.field(default_factory=max_workers_per_node)
    forks: ForkServer | None = None  # workers forked from it where they can be (prsd run)
    ops: OpWatch = dataclasses.field(default_factory=OpWatch)  # the agent's: commits in flight

    def wanted_workers(self) -> int:
        """The spec's worker count, else the GPU count, else the CPU count."""
        if self.spec.max_concurrency_per_instance:
            return self.spec.max_concurrency_per_instance
        return self.gpu_count or os.cpu_count() or 1

    def workers(self) -> int:
        """Worker processes on this node: :meth:`wanted_workers`, at most ``slot_cap``."""
        return min(self.wanted_workers(), self.slot_cap)

    def init_deadline_s(self) -> float:
        """How long a worker may stay in ``init()``: ``3 * timeout + 30`` s (the init rules)."""
        return 3.0 * self.spec.timeout_s + init_grace_s()

    def node_log_dir(self) -> Path:
        return self.layout.log_tree.node_dir(self.node_id)

    def main_log(self) -> Path:
        return self.layout.log_tree.node_main(self.node_id)

    def process_paths(self, number: int) -> ProcessPaths:
        name = process_name(number)
        tree, node = self.layout.log_tree, self.node_id
        return ProcessPaths(
            stdout=tree.stdout(node, name),
            stderr=tree.stderr(node, name),
            error=tree.error(node, name),
            entry_log=tree.entry_log(node, name),
            log_dir=tree.entry_script_logs(node),
            sys_log=tree.process_log(node, name),
            profile=tree.process_profile(node, name),
            working_dir=self.layout.worker_dir(node, name),
        )

    def hello(self, number: int, paths: ProcessPaths) -> dict[str, Any]:
        """The worker's configuration frame (checked as the worker will check it)."""
        spec = self.spec
        return Hello(
            job_id=self.job_id,
            node_id=self.node_id,
            process_name=process_name(number),
            code_dir=spec.code_dir,
            entry_script=spec.entry_script,
            working_dir=str(paths.working_dir),
            output_dir=str(self.layout.outputs),
            log_dir=str(paths.log_dir),
            entry_log_file=str(paths.entry_log),
            error_file=str(paths.error),
            kind=self.kind,
            output_action=spec.output_action,
            argv=list(spec.program_arguments),
            logging_level=spec.logging_level,
            append_row_format=spec.append_row_format,
            to_csv=dict(spec.to_csv_kwargs),
            dataframe_header=spec.append_row_dataframe_header,
            profiling_module=spec.profiling_module,
            profile_file=str(paths.profile),
            config=_config(spec),
            max_result_rows=max_result_rows(),
            max_result_bytes=max_result_bytes(),
        ).to_message()

    def env(
        self, gpu: int | None, uid: int | None = None, working_dir: str = "/"
    ) -> dict[str, str]:
        """The worker's environment (docs/entry-script.md; an allow-list, see ``worker_env``)."""
        env = worker_env(
            os.environ,
            str(self.layout.outputs),
            self.spec.environment_variables,
            python=self.spec.python,
            uid=uid,
            working_dir=working_dir,
        )
        env["PRSD_GPU_COUNT_FOUND"] = str(self.gpu_count)
        env["AZ_BATCHAI_GPU_COUNT_FOUND"] = str(self.gpu_count)
        if gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(gpu)
            # The index is NVML's, which counts in PCI bus order; CUDA's default order
            # (fastest first) may differ, and an unhealthy GPU must never be the one used.
            env.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
        return env


def _config(spec: JobSpec) -> dict[str, Any]:
    config = dataclasses.asdict(spec)
    config["input"] = dataclasses.asdict(spec.input)
    return config
