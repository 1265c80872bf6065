"""A job's environment on this node: resolved, found in the cache or built, held in use.

Invariant: :func:`prepare` returns the interpreter the job's workers run (or None: the
agent's own, when the job names nothing to build) only once the environment is
complete in the node's cache; until the job releases it, that entry is never evicted.
Every step is written to the job's build log ``logs/sys/environment/<node>.txt``:
what was resolved, the interpreter chosen, "found in the cache; nothing built" or
the build's full output.

The job's ``build_environment`` (recorded by the jobspec at intake) holds at most one
of ``conda_file`` / ``requirements`` (the file's text) or ``registered``
(``azureml:<name>:<version>``), and may hold ``image`` and ``python_mismatch``.

Errors: :class:`~prsd.envs.spec.EnvError` whose message is one line, the tool's own
first error line first (a build), or the resolver's (an unknown registered name, a
python pin no interpreter meets, a cache that is not writable, a built environment
the job's owner cannot run).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from prsd.envs import phase, registry
from prsd.envs.build import BuildFailed, build_with_conda, build_with_uv, with_disk_note
from prsd.envs.cache import READY, Entry, EnvCache
from prsd.envs.image import image_note
from prsd.envs.interp import Interpreter, choose, find_interpreters
from prsd.envs.spec import EnvError, EnvSpec, left_out_note, parse_conda, parse_requirements

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from prsd.envs.settings import EnvSettings
    from prsd.owner import RunAs


@dataclass
class Prepared:
    python: str | None
    entry: Entry | None = None
    built: bool = False
    # A registered environment's image, named as not used; the interpreter used for a
    # pin none met exactly (said in the job's main log too).
    note: str = ""

    def release(self) -> None:
        if self.entry is not None:
            self.entry.release()


def resolve(build_environment: dict[str, Any], spool: Path) -> EnvSpec | None:
    """The file to build from: the job's own, else the registered environment's.

    Raises:
        EnvError: an unknown registered name or version, or a file that does not parse.
    """
    return resolve_with_image(build_environment, spool)[0]


def resolve_with_image(
    build_environment: dict[str, Any], spool: Path
) -> tuple[EnvSpec | None, str]:
    """:func:`resolve`, and the image a registered environment names ("" when none)."""
    source = str(build_environment.get("source", ""))
    if "conda_file" in build_environment:
        return parse_conda(build_environment["conda_file"], source or "conda_file"), ""
    if "requirements" in build_environment:
        text = build_environment["requirements"]
        return parse_requirements(text, source or "requirements"), ""
    if "registered" in build_environment:
        name, version = registry.parse_reference(build_environment["registered"])
        if build_environment.get("curated") and name not in registry.known(spool):
            return None, ""  # Azure's curated environment, not registered here
        data = registry.lookup(spool, name, version)
        image = str(data.get("image") or "")
        text = registry.conda_text(data)
        if text is None:
            return None, image  # an image only: nothing to build here
        return parse_conda(text, f"environment {name}:{data.get('version', version)}"), image
    return None, ""


def prepare(
    build_environment: dict[str, Any],
    *,
    spool: Path,
    log_path: Path,
    settings: EnvSettings,
    on_building: Callable[[str], None],
    check_runnable: Callable[[str], str | None] = lambda _p: None,
    build_as: RunAs | None = None,
) -> Prepared:
    """Resolve, find or build, and hold the job's environment (see the module doc).

    ``on_building(phase)`` is called as a build (or the wait for one) starts and at
    each phase it reaches. ``check_runnable(python)`` says why the job's owner could
    not run it (None: fine). ``build_as``: the job's owner when a root agent serves
    another user: source builds run with its ids and the result is that owner's.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("a", encoding="utf-8") as log:
        try:
            return _prepare(
                build_environment, spool, log, settings, on_building, check_runnable, build_as
            )
        except EnvError as exc:
            _say(log, f"failed: {exc}")
            raise


def _prepare(
    build_environment: dict[str, Any],
    spool: Path,
    log: TextIO,
    settings: EnvSettings,
    on_building: Callable[[str], None],
    check_runnable: Callable[[str], str | None],
    build_as: RunAs | None,
) -> Prepared:
    spec, image = resolve_with_image(build_environment, spool)
    note = image_note({**build_environment, "image": image}, settings.runtime) if image else None
    if note:
        _say(log, note)
    if spec is None:
        what = build_environment.get("registered", "")
        _say(log, f"{what}: nothing to build here; the workers run on the agent's Python")
        return Prepared(None, note=note or "")
    _say(
        log,
        f"environment from {build_environment.get('source') or build_environment.get('registered') or spec.kind}: "
        f"{spec.python or 'no python pin'}; packages: {', '.join(spec.pip) or 'none'}",
    )
    if spec.left_out:
        _say(log, left_out_note(spec, "the conda file"))
    conda = settings.conda
    key, interp, chosen_note = _target(spec, build_environment, settings, log, check_runnable)
    key, as_owner = _builder(spec, key, interp, settings, build_as, log)
    cache = EnvCache(settings.cache, settings.budget_bytes, settings.build_timeout_s)
    started = time.monotonic()

    def build(prefix: Path) -> None:
        on_building(phase.STARTING)
        _say(log, f"building environment {key} in {prefix}")
        if conda:
            build_with_conda(
                conda, spec, prefix, log, timeout_s=settings.build_timeout_s, on_phase=on_building
            )
        else:
            build_with_uv(
                spec,
                interp,
                prefix,
                log,
                cache=settings.cache / ".uv-cache",
                timeout_s=settings.build_timeout_s,
                source_builds=settings.source_builds,
                build_as=as_owner,
                on_phase=on_building,
            )
        meta = {
            "key": key,
            "interpreter": interp,
            "packages": list(spec.pip),
            "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        (prefix / READY).write_text(json.dumps(meta, indent=1))

    def waiting() -> None:
        on_building(phase.WAITING)
        _say(log, f"waiting for another build of environment {key} on this node")

    try:
        entry = cache.ensure(key, build, waiting, in_place=bool(conda))
    except TimeoutError as exc:
        raise EnvError(str(exc)) from None
    except BuildFailed as exc:
        raise with_disk_note(exc, settings.cache) from None
    except OSError as exc:
        raise EnvError(f"the environment cache {settings.cache} is not usable: {exc}") from None
    said = "; ".join(n for n in (note, chosen_note) if n)
    prepared = Prepared(str(entry.path / "bin" / "python"), entry, entry.built, said)
    if entry.built:
        _say(log, f"environment {key} built in {time.monotonic() - started:.1f} s: {entry.path}")
    else:
        _say(log, f"environment {key} found in the cache; nothing built: {entry.path}")
    python = prepared.python or ""
    why = check_runnable(python) or check_runnable(os.path.realpath(python))
    if why is not None:
        prepared.release()
        raise EnvError(f"the job's owner cannot run the environment's python: {why}")
    _trim(cache, key, log)
    return prepared


def _target(
    spec: EnvSpec,
    build_environment: dict[str, Any],
    settings: EnvSettings,
    log: TextIO,
    check_runnable: Callable[[str], str | None],
) -> tuple[str, str, str]:
    """The cache key, what builds it (the conda-family tool, else the interpreter), and
    the note when the interpreter does not meet the pin exactly."""
    if settings.conda:
        _say(log, f"conda-family tool: {settings.conda}")
        return spec.key(f"conda:{settings.conda}"), settings.conda, ""
    mismatch = str(build_environment.get("python_mismatch") or settings.mismatch)
    chosen, why = choose(spec.python, _runnable(settings, log, check_runnable), mismatch)
    _say(log, f"interpreter: {chosen.shown}" + (f" ({why})" if why else ""))
    return spec.key(f"{chosen.path} {chosen.version}"), chosen.path, why


def _builder(
    spec: EnvSpec,
    key: str,
    interp: str,
    settings: EnvSettings,
    build_as: RunAs | None,
    log: TextIO,
) -> tuple[str, RunAs | None]:
    """The key and who runs the install: the job's owner when source builds may run its
    packages' code for another user (the key then names the owner)."""
    if not settings.source_builds:
        _say(log, "source builds are off on this node (PRSD_ENV_SOURCE_BUILDS=no): wheels only")
        return key, None
    if settings.conda or build_as is None:
        return key, None
    # What one user's build code could change is never run by another user's job.
    return spec.key(f"{interp} built as uid {build_as.uid} ({key})"), build_as


def _trim(cache: EnvCache, key: str, log: TextIO) -> None:
    try:
        for gone in cache.evict(keep=key):
            _say(log, f"removed least-recently-used environment {gone} (cache over its budget)")
    except OSError as exc:
        _say(log, f"could not trim the cache: {exc}")


def _runnable(
    settings: EnvSettings, log: TextIO, check_runnable: Callable[[str], str | None]
) -> list[Interpreter]:
    """The node's interpreters the job's owner can run (the others named in the log)."""
    usable = []
    for found in find_interpreters(settings.pythons):
        why = check_runnable(found.path)
        if why is None:
            usable.append(found)
        else:
            _say(log, f"interpreter {found.shown} skipped: the job's owner cannot run it: {why}")
    return usable


def _say(log: TextIO, line: str) -> None:
    log.write(f"{datetime.now(UTC).isoformat(timespec='seconds')} {line}\n")
    log.flush()
