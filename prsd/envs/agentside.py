"""One job's environment as its agent sees it: prepared once, reported, released.

Invariant: :meth:`JobEnvironment.prepare` runs before any worker of the job starts
on this node and returns the interpreter the workers run (None: the job's own
``python`` or the agent's); while it runs, the node report says
``environment: building`` with the time it began and the phase it is in
(:mod:`prsd.envs.phase`; ``prsctl status``, ``prsd run`` and the SDKs' streams show it);
afterwards ``ready`` or ``failed`` with the one-line error. The cache entry stays
held in use until :meth:`JobEnvironment.release` (the job's run on this node ended).

A job with no environment to build (most) loads none of the build code:
:meth:`JobEnvironment.prepare` imports it (``prsd.envs.node``, ``.image``, ``.settings``
and what they use) only for a job that names one, or an image.

Errors: none raised; a failure is kept in :attr:`JobEnvironment.error` and reported
as the node's first init error, marked ``environment`` (prsd/leader/run/initrule.py puts
its text first in the job's result).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio.to_thread

from prsd.envs.spec import EnvError, wanted
from prsd.owner import run_as_for_job, unreadable_for
from prsd.spool.envrecord import EnvBuild
from prsd.spool.initrecords import InitError

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from prsd.envs.node import Prepared
    from prsd.spool.envrecord import EnvState
    from prsd.spool.layout import JobLayout


class JobSpec(Protocol):
    """What of a job's spec (prsd.jobspec.JobSpec) picks its environment."""

    @property
    def build_environment(self) -> dict[str, Any]: ...

    @property
    def python(self) -> str | None: ...


def build_log(layout: JobLayout, node_id: str) -> Path:
    """``logs/sys/environment/<node>.txt``: every build step of the job on this node."""
    return layout.log_tree.environment_log(node_id)


class JobEnvironment:
    def __init__(
        self, layout: JobLayout, node_id: str, spec: JobSpec, on_change: Callable[[], None]
    ) -> None:
        self.layout = layout
        self.node_id = node_id
        self.spec = spec
        self.on_change = on_change
        self.state: EnvState | Literal[""] = ""  # "": nothing to build
        self.since = ""
        self.phase = ""
        self.error = ""
        self.note = ""  # an image named and not used (prsd/envs/image.py)
        self._prepared: Prepared | None = None

    @property
    def failed(self) -> bool:
        return self.state == "failed"

    async def prepare(self) -> str | None:
        """Find or build the job's environment; the workers' interpreter."""
        build = self.spec.build_environment
        if "image" in build:
            from prsd.envs.image import image_note
            from prsd.envs.settings import node_runtime

            self.note = image_note(build, node_runtime()) or ""
        if self.spec.python or not wanted(build):
            return None
        try:
            self._prepared = await anyio.to_thread.run_sync(self._prepare_blocking)
        except (EnvError, OSError) as exc:  # OSError: the job's log folder cannot be written
            self.state, self.error = "failed", str(exc)
            return None
        self.state = "ready"
        self.note = self.note or self._prepared.note
        self.on_change()
        return self._prepared.python

    def _prepare_blocking(self) -> Prepared:
        from prsd.envs.node import prepare
        from prsd.envs.settings import EnvSettings

        settings = EnvSettings.from_env()
        run_as = run_as_for_job(self.layout)
        spool = self.layout.spool.root

        def check(python: str) -> str | None:
            return None if run_as is None else unreadable_for(run_as, python)

        return prepare(
            self.spec.build_environment,
            spool=spool,
            log_path=build_log(self.layout, self.node_id),
            settings=settings,
            on_building=self._building,
            check_runnable=check,
            build_as=run_as,
        )

    def _building(self, phase: str) -> None:
        if self.state != "building":
            self.state = "building"
            self.since = datetime.now(UTC).isoformat(timespec="seconds")
        elif phase == self.phase:
            return
        self.phase = phase
        self.on_change()

    def build(self) -> EnvBuild | None:
        """The node report's ``environment`` (None when there is none)."""
        state = self.state
        if state == "":
            return None
        return EnvBuild(state, self.since, self.phase, self.error)

    def init_error(self) -> InitError:
        """The node's first init error for a failed environment."""
        # the reason names the build log; no traceback to point at
        log = str(build_log(self.layout, self.node_id))
        return InitError("environment", self.error, environment=True, build_log=log)

    def release(self) -> None:
        if self._prepared is not None:
            self._prepared.release()
            self._prepared = None
