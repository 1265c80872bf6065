"""Loading a job folder's ``job.yaml`` into one frozen :class:`~prsd.jobspec.model.JobSpec`.

Guarantees: the result holds canonical values only (no alias, no ``${{...}}``, no
relative path); every path in it is absolute and was checked against the containment
rules of :mod:`prsd.jobspec.paths`; every failure is one JobSpecError naming the key,
the file and line, and what is expected; Azure-only keys are listed in
``JobSpec.ignored`` and redirections in ``JobSpec.notes``. The loader reads the job
file, ``origin.json``, MLTable files and the settings file; of the data it only stats
paths (and lists folders to expand MLTable patterns). It does so with the ids of the
process that calls it: a root leader loads another user's job in a process with that
user's ids (prsd/leader/intake/specowner.py), so the kernel answers every one of those looks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from prsd.errors import JobSpecError
from prsd.jobspec import build, confine
from prsd.jobspec.aliases import apply_aliases
from prsd.jobspec.arguments import PathContext, read_arguments
from prsd.jobspec.code import code_folder, entry_script, to_csv_settings, worker_python
from prsd.jobspec.envfiles import environment_to_build
from prsd.jobspec.inputs import InputContext, plan_input
from prsd.jobspec.model import JobSpec
from prsd.jobspec.output import OutputContext, plan_output
from prsd.jobspec.overrides import apply_overrides
from prsd.jobspec.paths import Roots
from prsd.jobspec.pipeline import Selected, select_job
from prsd.jobspec.ports import Port, parse_ports, place_outputs, resolve_inputs
from prsd.jobspec.refs import bind_literals
from prsd.jobspec.schema import flatten
from prsd.jobspec.yamlsafe import Doc, Setting, read_limited, read_yaml
from prsd.spool.badrecord import BadRecord
from prsd.spool.jobowner import OwnerRecordError, read_job_owner
from prsd.spool.layout import JobLayout
from prsd.spool.originrecord import Origin

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from prsd.jobspec.overrides import Override

JOB_FILES = ("job.yaml", "job.yml")
ORIGIN_FILE = "origin.json"
# Keys whose ${{...}} references are expanded by the input, output and argument readers.
_REFERENCE_KEYS = frozenset(
    {
        "inputs",
        "outputs",
        "input_data",
        "side_inputs",
        "task.program_arguments",
        "task.append_row_to",
    }
)


def find_job_file(job_dir: Path) -> Path:
    """The job file of ``job_dir``: ``job.yaml`` or ``job.yml``.

    Raises:
        JobSpecError: ``job_dir`` is not a folder; there is no job file, or both; or
            the job file is not a regular file or a symlink leading outside the folder.
    """
    folder = Path(os.path.abspath(job_dir))
    if not folder.is_dir():
        raise JobSpecError("", str(folder), "is not a folder holding a job.yaml")
    present = [folder / name for name in JOB_FILES if os.path.lexists(folder / name)]
    if not present:
        raise JobSpecError("", str(folder), "holds no job.yaml (or job.yml)")
    if len(present) > 1:
        raise JobSpecError("", str(folder), "holds both job.yaml and job.yml; keep one")
    path = present[0]
    real = Path(os.path.realpath(path))
    if path.is_symlink() and not real.is_relative_to(Path(os.path.realpath(folder))):
        raise JobSpecError(
            "", str(path), f"is a symlink leading outside the job folder (to {real})"
        )
    if not path.is_file():
        raise JobSpecError("", str(path), "is not a regular file")
    return path


def read_origin(job_dir: Path, roots: Roots, owner_uid: int | None = None) -> Path | None:
    """The original job folder named by ``origin.json``, if the job was submitted from one.

    For a confined job (``roots.confined``) the folder must belong to the job's owner
    (``owner_uid``) and lie in no guarded folder: ``origin.json`` is the owner's own
    file, so the folder it names is believed only as far as the owner's own rights go.

    Raises:
        JobSpecError: a malformed ``origin.json``, or a folder that is missing, outside
            the allowed roots, or (confined) not the owner's.
    """
    path = job_dir / ORIGIN_FILE
    if not os.path.lexists(path):
        return None
    folder = _origin_folder(read_limited(path, 64 * 1024, what="origin file"), path)
    if not folder.is_dir():
        problem = f"the original job folder {folder} no longer exists"
        raise JobSpecError("job_dir", str(path), problem)
    found = _origin_problem(folder, roots, owner_uid)
    if found is not None:
        raise JobSpecError("job_dir", str(path), f"{folder} {found}")
    return folder


def _origin_problem(folder: Path, roots: Roots, owner_uid: int | None) -> str | None:
    if not roots.confined:
        return roots.problem(folder)
    real = PurePosixPath(os.path.realpath(folder))
    guarded = [PurePosixPath(g) for g in roots.guarded]
    found = confine.guard_problem(real, guarded, [PurePosixPath(f) for f in roots.folders])
    if found is not None:
        return found
    uid = os.stat(real).st_uid
    if owner_uid is not None and uid != owner_uid:
        return f"belongs to uid {uid}, not to the job's owner (uid {owner_uid})"
    return None


def _origin_folder(raw: bytes, path: Path) -> Path:
    try:
        origin = Origin.from_json(raw)
    except BadRecord as exc:
        raise JobSpecError("job_dir", str(path), str(exc)) from None
    if not origin.job_dir:
        problem = "expected the absolute path of the original job folder"
        raise JobSpecError("job_dir", str(path), problem)
    return Path(os.path.normpath(origin.job_dir))


def load_job_spec(
    job_dir: Path,
    *,
    spool_job_dir: Path | None = None,
    allowed_roots: Sequence[Path] = (),
    owner_uid: int | None = None,
    daemon_uid: int | None = None,
    spool_root: Path | None = None,
    job_file: Path | None = None,
    overrides: Sequence[Override] = (),
) -> JobSpec:
    """Load and check the job spec of ``job_dir``.

    Args:
        job_dir: the folder holding ``job.yaml`` (and maybe ``origin.json``, ``code/``).
        spool_job_dir: the job's folder in the spool, where outputs go (default: job_dir).
        allowed_roots: folders absolute paths must lie under; empty: the configured ones.
        owner_uid: the job's owner (default: the one recorded in ``owner.json`` by the
            leader, else the owner of ``spool_job_dir``).
        daemon_uid: the user the daemons run as (default: this process's).
        spool_root: the spool (default: the folder above ``jobs/`` when
            ``spool_job_dir`` is ``<spool>/jobs/<id>``).
        job_file: the job file when it is not ``job_dir``'s ``job.yaml`` (``prsd run FILE``).
        overrides: ``--set`` changes applied to the file's keys before anything is checked.

    Returns:
        The normalised, frozen JobSpec.

    Raises:
        JobSpecError: anything in the job folder that cannot run as written.
    """
    folder = Path(os.path.abspath(job_dir))
    spool = Path(os.path.abspath(spool_job_dir)) if spool_job_dir is not None else folder
    if owner_uid is None:
        owner_uid = _default_owner(spool if os.path.lexists(spool) else folder)
    if spool_root is None and spool.parent.name == "jobs":
        spool_root = JobLayout(spool, spool.name).spool.root
    roots = Roots.of(list(allowed_roots)).for_job(
        owner_uid=owner_uid,
        daemon_uid=os.geteuid() if daemon_uid is None else daemon_uid,
        spool=spool_root,
        job_root=spool,
    )
    path = job_file.absolute() if job_file is not None else find_job_file(folder)
    try:
        origin = read_origin(folder, roots, owner_uid)
        if origin is not None:
            roots = roots.with_job_folder(origin)
        elif folder != spool:
            roots = roots.with_job_folder(folder)
        doc = read_yaml(path)
        if overrides:
            doc = Doc(doc.path, apply_overrides(doc.data, list(overrides)), doc.lines)
        return _Loader(folder, spool, roots, origin, select_job(doc)).spec()
    except OSError as exc:
        # A folder the leader may not look into, a name the file system refuses...
        where = f" {exc.filename}" if exc.filename else ""
        raise JobSpecError("", str(path), f"cannot read{where}: {exc.strerror}") from None


def _default_owner(folder: Path) -> int:
    """The owner the leader recorded (``owner.json``, the daemons' own), else the folder's."""
    try:
        return read_job_owner(JobLayout(folder, folder.name)).uid
    except OwnerRecordError:
        pass
    try:
        return os.lstat(folder).st_uid
    except OSError:
        return os.geteuid()


@dataclass(frozen=True)
class _Wiring:
    """The declared inputs and outputs, where they are, and the reference table."""

    inputs: Mapping[str, Port]
    outputs: Mapping[str, Port]
    resolved: Mapping[str, Path | None]
    places: Mapping[str, Path]
    refs: Mapping[str, str | None]


class _Loader:
    """One load: the steps in the order their errors are most useful to a user."""

    def __init__(
        self, job_dir: Path, spool: Path, roots: Roots, origin: Path | None, sel: Selected
    ) -> None:
        self.job_dir = job_dir
        self.spool = spool
        self.roots = roots
        self.origin = origin
        self.sel = sel
        self.base = origin or job_dir
        flat = flatten(sel.job, sel.site)
        self.settings = apply_aliases(flat.settings)
        self.ignored: list[str] = [*sel.ignored, *flat.ignored]
        self.notes: list[str] = []

    def spec(self) -> JobSpec:
        build.check_types(self.settings)
        entry = self._required("task.entry_script", "the Python file with init() and run()")
        io = self._wire()
        in_ctx = InputContext(self.base, self.roots, io.inputs, io.resolved, io.refs)
        plan = plan_input(self.settings, in_ctx, self.sel.site)
        arg_ctx = PathContext(self.base, self.roots, plan.known)
        arguments = self.settings.get("task.program_arguments")
        args = read_arguments(arguments, io.refs, arg_ctx, plan.input.tabular)
        out_ctx = OutputContext(self.spool, self.roots, io.outputs, io.places, io.refs)
        out = plan_output(self.settings, out_ctx)
        code_dir = self._code_dir()
        python, env_ignored = worker_python(self.settings.get("task.environment"), self.base)
        to_build, env_notes = environment_to_build(self.settings.get("task.environment"), self.base)
        self.ignored += [*env_ignored, *args.ignored]
        self.notes += [*plan.notes, *out.notes, *args.notes, *env_notes]
        fields = self._fields(plan.input.tabular, args.tuning)  # adds its notes first
        return JobSpec(
            name=build.job_name(self.settings.get("name"), self._default_name()),
            job_dir=str(self.base),
            input=plan.input,
            code_dir=str(code_dir),
            entry_script=entry_script(entry, code_dir),
            program_arguments=args.tokens,
            output_action=out.action,
            append_row_to=out.append_row_to,
            to_csv_kwargs=to_csv_settings(code_dir),
            environment_variables=build.environment(self.settings),
            python=python,
            build_environment=to_build,
            side_inputs=plan.side_inputs,
            outputs={name: str(p) for name, p in io.places.items()},
            output_folders=tuple(
                str(p) for n, p in io.places.items() if io.outputs[n].kind != "uri_file"
            ),
            **fields,
            ignored=tuple(dict.fromkeys(self.ignored)),
            notes=tuple(dict.fromkeys(self.notes)),
        )

    def _wire(self) -> _Wiring:
        inputs = parse_ports(self.settings.get("inputs"), self.sel.parent, outputs=False)
        outputs = parse_ports(self.settings.get("outputs"), self.sel.parent, outputs=True)
        self.ignored += inputs.ignored + outputs.ignored
        self._bind_literals(inputs.ports)
        resolved = resolve_inputs(inputs.ports, self.base, self.roots)
        places, notes = place_outputs(outputs.ports, self.spool, self.roots)
        self.notes += notes
        refs = _refs(inputs.ports, resolved, places)
        return _Wiring(inputs.ports, outputs.ports, resolved, places, refs)

    def _code_dir(self) -> Path:
        snapshot = self.origin is not None
        setting = self.settings.get("task.code")
        return code_folder(setting, self.job_dir, snapshot, self.roots, self.sel.site)

    def _required(self, key: str, what: str) -> Setting:
        setting = self.settings.get(key)
        if setting is None or setting.value is None:
            raise self.sel.site.labelled(key).error(f"required: {what}")
        return setting

    def _bind_literals(self, ports: Mapping[str, Port]) -> None:
        literals = {
            f"inputs.{n}": p.value for n, p in ports.items() if p.literal and p.value is not None
        }
        literals.update(
            {n: p.value for n, p in self.sel.parent.items() if p.literal and p.value is not None}
        )
        plain = {k: s for k, s in self.settings.items() if k not in _REFERENCE_KEYS}
        self.settings.update(bind_literals(plain, literals))

    def _fields(self, tabular: bool, tuning: Mapping[str, tuple[Any, str]]) -> dict[str, Any]:
        fields = build.scalar_fields(self.settings)
        setting = self.settings.get("mini_batch_size")
        partitioned = "partition_keys" in self.settings
        size, notes = build.mini_batch_size(setting, tabular, partitioned)
        fields["mini_batch_size"] = (size, setting.site.key if setting else "mini_batch_size")
        keys = self.settings.get("partition_keys")
        if keys is not None:
            fields["partition_keys"] = (tuple(keys.value), keys.site.key)
        key = self.settings["task.program_arguments"].site.key if tuning else ""
        values, conflicts = build.merge_tuning(fields, tuning, key)
        self.notes += notes + conflicts
        return values

    def _default_name(self) -> str:
        name = self.sel.pipeline_name
        if isinstance(name, str) and name.strip():
            return name
        return build.default_name(self.job_dir, self.origin)


def _refs(
    ports: Mapping[str, Port], resolved: Mapping[str, Path | None], places: Mapping[str, Path]
) -> dict[str, str | None]:
    refs: dict[str, str | None] = {}
    for name, port in ports.items():
        if port.literal:
            refs[f"inputs.{name}"] = None if port.value is None else str(port.value)
        else:
            path = resolved.get(name)
            refs[f"inputs.{name}"] = None if path is None else str(path)
    refs.update({f"outputs.{name}": str(path) for name, path in places.items()})
    return refs
