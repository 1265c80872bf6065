"""The normalised job spec: one frozen object, serialisable to ``spec.json``.

Every path in it is absolute. Every duration is in seconds and every size in bytes
(the names say so). Defaults are Azure's, except where docs/jobspec.md says why not.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from prsd.spool.jsonobject import decode_object

INPUT_FORMATS = ("files", "csv", "jsonl", "parquet")
TABULAR_FORMATS = ("csv", "jsonl", "parquet")
OUTPUT_ACTIONS = ("append_row", "summary_only")
APPEND_ROW_FORMATS = ("text", "parquet")
LOGGING_LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG")

DEFAULT_FILES_MINI_BATCH = 10
DEFAULT_TABULAR_MINI_BATCH_BYTES = 1024 * 1024
DEFAULT_APPEND_ROW_FILE_NAME = "parallel_run_step.txt"


@dataclass(frozen=True)
class InputSpec:
    """The input that is split into mini-batches.

    Attributes:
        paths: absolute paths of files and folders, in the order given.
        format: ``files`` (run() gets a list of paths) or a tabular format (a DataFrame).
        name: the input's name in the spec (``input_data``, or the v2 ``inputs`` key).
        delimiter: CSV field separator (MLTable ``read_delimited.delimiter``).
        header: CSV header handling: ``all_files_same_headers`` (each file has a
            header line), ``no_header``.
        encoding: text encoding of CSV/JSONL files.
        partition_format: for ``files``: ``{user}/{season}/{genre}.wav`` naming the keys
            in the folder layout (relative to each input path).
        include_path_column: MLTable ``include_path_column``: add a ``Path`` column.
        path_column: the name of that column (MLTable ``path_column``).
        empty_as_string: MLTable ``empty_as_string``: an empty CSV field is ``""``.
        steps: MLTable transformations after the reader (:mod:`prsd.jobspec.mlsteps`),
            applied by the leader before the mini-batches are cut.
    """

    paths: tuple[str, ...]
    format: str = "files"
    name: str = "input_data"
    delimiter: str = ","
    header: str = "all_files_same_headers"
    encoding: str = "utf-8"
    partition_format: str | None = None
    include_path_column: bool = False
    path_column: str = "Path"
    empty_as_string: bool = False
    steps: tuple[dict[str, Any], ...] = ()

    @property
    def tabular(self) -> bool:
        return self.format in TABULAR_FORMATS

    @property
    def transformed(self) -> bool:
        """The leader reads and transforms the table before cutting it (MLTable steps)."""
        return self.tabular and (bool(self.steps) or self.empty_as_string)


@dataclass(frozen=True)
class JobSpec:
    """Everything the leader, the agents and the workers need to know about a job."""

    name: str
    job_dir: str  # the folder relative paths in the spec were resolved against
    input: InputSpec
    mini_batch_size: int  # files: files per mini-batch; tabular: bytes per mini-batch
    code_dir: str
    entry_script: str  # a path relative to code_dir, or a dotted module name
    partition_keys: tuple[str, ...] = ()
    instance_count: int | None = None  # None: every node may work on the job
    max_concurrency_per_instance: int | None = None  # None: GPU count, else CPU count
    max_memory_per_worker_bytes: int | None = None  # each worker's memory limit (cgroup)
    mini_batch_error_threshold: int = -1  # failed mini-batches tolerated; -1 ignores all
    item_error_threshold: int = -1  # failed items tolerated; -1 ignores all
    allowed_failed_percent: float = 100.0
    max_retries: int = 2
    timeout_s: float = 60.0  # one run() call
    logging_level: str = "INFO"
    resource_monitor_interval_s: float = 600.0  # 0 = off
    task_overhead_timeout_s: float = 600.0  # loading a mini-batch before run()
    progress_update_timeout_s: float | None = None  # None: derived, see progress_timeout_s
    first_task_creation_timeout_s: float = 600.0
    profiling_module: str = ""  # "" | "cProfile" | "profile"
    program_arguments: tuple[str, ...] = ()  # sys.argv[1:] of the workers
    output_action: str = "summary_only"
    append_row_to: str | None = None  # absolute path of the append_row file
    append_row_format: str = "text"
    append_row_dataframe_header: bool = False
    to_csv_kwargs: dict[str, Any] = field(default_factory=dict)  # settings.json overrides
    environment_variables: dict[str, str] = field(default_factory=dict)
    python: str | None = None  # task.environment.python: the workers' interpreter
    build_environment: dict[str, Any] = field(default_factory=dict)  # prsd/envs/node.py
    side_inputs: dict[str, str] = field(default_factory=dict)  # name -> absolute path
    outputs: dict[str, str] = field(default_factory=dict)  # v2 output name -> absolute path
    output_folders: tuple[str, ...] = ()  # the outputs that are folders: made before workers start
    bisect_failed_mini_batches: bool = False
    ignored: tuple[str, ...] = ()  # Azure-only keys accepted and not used
    notes: tuple[str, ...] = ()  # things to tell the user once (outputs redirected, ...)

    @property
    def progress_timeout_s(self) -> float:
        """No mini-batch finished anywhere for this long fails the job.

        Default (Azure's old driver): ``3 * (timeout + task_overhead_timeout)``.
        """
        if self.progress_update_timeout_s is not None:
            return self.progress_update_timeout_s
        return 3.0 * (self.timeout_s + self.task_overhead_timeout_s)

    @property
    def init_stuck_timeout_s(self) -> float:
        """Every worker still in init() after this long fails the job (the init rules)."""
        return 3.0 * self.timeout_s + 30.0

    def to_json(self) -> str:
        """Serialise for ``spec.json`` (agents and restarted leaders read it back)."""
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> JobSpec:
        """Read back what :meth:`to_json` wrote.

        Raises:
            ValueError: the text is not a serialised JobSpec.
        """
        obj = decode_object(text)
        given = obj["input"]
        steps = tuple(given.get("steps", ()))
        obj["input"] = InputSpec(**{**given, "paths": tuple(given["paths"]), "steps": steps})
        tuples = {f.name for f in fields(cls) if str(f.type).startswith("tuple")}
        for key in tuples:
            obj[key] = tuple(obj[key])
        return cls(**obj)


def short_is_failure(spec: JobSpec) -> bool:
    """Does a mini-batch that returned fewer elements than inputs leave a gap that counts?"""
    return spec.output_action == "append_row" or spec.item_error_threshold != -1
