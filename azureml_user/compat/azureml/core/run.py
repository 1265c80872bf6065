"""``Run.get_context()``: an offline run whose metrics go to the job's logs.

Every ``log*`` call appends one JSON line to ``logs/user/metrics/<node>/<process>.jsonl``
of the job (``{"time", "run", "kind", "name", "value", "description"}``), so metrics
of every worker are kept and can be read back with any JSON-lines reader. Secrets come
from the environment or a secrets file (:meth:`Run.get_secret`). Nothing here talks
to Azure; what would (uploads, child runs) is written down or refused with a reason.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from ._where import config, entry_script, metrics_file

SECRETS_ENV = "PRSD_SECRETS_FILE"


class Experiment:
    """The experiment an offline run belongs to: named after the job."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.workspace = None

    def __repr__(self) -> str:
        return f"Experiment(name={self.name!r}, offline)"


def _job_name() -> str:
    name = config().get("name")
    return name if isinstance(name, str) and name else str(entry_script().job_id)


def _read_secrets(path: str) -> dict[str, str]:
    """A JSON object, or ``KEY=VALUE`` lines (``#`` comments)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text.lstrip().startswith("{"):
        data = json.loads(text)
        return {str(k): str(v) for k, v in data.items()}
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def secrets_file() -> str:
    """``$PRSD_SECRETS_FILE``, else ``secrets.env`` in the job's code snapshot."""
    env = os.environ.get(SECRETS_ENV, "")
    if env:
        return env
    code_dir = config().get("code_dir")
    return os.path.join(code_dir, "secrets.env") if isinstance(code_dir, str) else ""


class Run:
    """An offline run (``Run.get_context()``), as v1 entry scripts use it."""

    _context: Run | None = None

    def __init__(self, run_id: str, parent: Run | None = None) -> None:
        self.id = run_id
        self._parent = parent
        self.experiment = Experiment(_job_name())
        self.number = 0
        self.display_name = run_id
        self.status = "Running"
        self.tags: dict[str, Any] = {}
        self.properties: dict[str, Any] = {}
        self._metrics: dict[str, list[Any]] = {}

    @classmethod
    def get_context(cls, allow_offline: bool = True, **kwargs: Any) -> Run:
        """This worker's offline run (one per process)."""
        if cls._context is None:
            es = entry_script()
            run_id = f"OfflineRun_{es.job_id}_{es.node_id}_{es.agent_name}"
            parent = cls(f"OfflineRun_{es.job_id}")
            cls._context = cls(run_id, parent)
        return cls._context

    @property
    def parent(self) -> Run:
        """The job's run (itself offline; a job's run has itself as parent)."""
        return self._parent if self._parent is not None else self

    def __repr__(self) -> str:
        return f"Run(id={self.id!r}, offline)"

    # --- metrics ----------------------------------------------------------------------

    def _write(self, kind: str, name: str, value: Any, description: str = "") -> None:
        self._metrics.setdefault(name, []).append(value)
        row = {"time": time.time(), "run": self.id, "kind": kind, "name": name,
               "value": value, "description": description}  # fmt: skip
        path = metrics_file()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row, default=str) + "\n")

    def log(self, name: str, value: Any, description: str = "", step: int | None = None) -> None:
        self._write("scalar", name, value, description)

    def log_list(self, name: str, value: list[Any], description: str = "") -> None:
        self._write("list", name, list(value), description)

    def log_row(self, name: str, description: str | None = None, **kwargs: Any) -> None:
        self._write("row", name, dict(kwargs), description or "")

    def log_table(self, name: str, value: dict[str, list[Any]], description: str = "") -> None:
        self._write("table", name, dict(value), description)

    def log_image(self, name: str, path: str | None = None, plot: Any = None,
                  description: str = "") -> None:  # fmt: skip
        self._write("image", name, path if path is not None else repr(plot), description)

    def get_metrics(self, name: str | None = None, **kwargs: Any) -> dict[str, Any]:
        """What this process logged (a single value, or the list of values per name)."""
        found = {k: (v[0] if len(v) == 1 else list(v)) for k, v in self._metrics.items()}
        return found if name is None else {name: found[name]} if name in found else {}

    # --- secrets ----------------------------------------------------------------------

    def get_secret(self, name: str) -> str:
        """A secret: the environment variable ``name``, else the secrets file's entry.

        Raises:
            KeyError: neither has it (the message names both places).
        """
        value = os.environ.get(name)
        if value is not None:
            return value
        path = secrets_file()
        if path and os.path.isfile(path):
            secrets = _read_secrets(path)
            if name in secrets:
                return secrets[name]
        raise KeyError(
            f"secret {name!r} is neither an environment variable of the job "
            f"(task.environment_variables) nor in the secrets file {path or '(none)'} "
            f"(${SECRETS_ENV}, else secrets.env in the code folder)"
        )

    def get_secrets(self, secrets: list[str]) -> dict[str, str]:
        return {name: self.get_secret(name) for name in secrets}

    # --- the rest of what v1 scripts touch ----------------------------------------------

    def tag(self, key: str, value: Any = None) -> None:
        self.tags[key] = value

    def set_tags(self, tags: dict[str, Any]) -> None:
        self.tags.update(tags)

    def get_tags(self) -> dict[str, Any]:
        return dict(self.tags)

    def add_properties(self, properties: dict[str, Any]) -> None:
        self.properties.update(properties)

    def get_properties(self) -> dict[str, Any]:
        return dict(self.properties)

    def upload_file(self, name: str, path_or_stream: Any) -> None:
        """Recorded in the metrics file (the file stays where it is)."""
        self._write("upload", name, str(path_or_stream))

    def complete(self) -> None:
        self.status = "Completed"

    def fail(self, error_details: Any = None, **kwargs: Any) -> None:
        self.status = "Failed"

    def get_status(self) -> str:
        return self.status

    def child_run(self, *args: Any, **kwargs: Any) -> Run:
        raise RuntimeError("child runs need Azure ML; an offline prsd run has none")
