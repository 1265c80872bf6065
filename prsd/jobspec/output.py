"""The output action and the append_row file.

Azure's rule: ``append_row`` when ``task.append_row_to`` is given (v2) or
``output_action: append_row`` (v1, file ``outputs/<append_row_file_name>``), else
``summary_only``. Guarantees: the append_row file is an absolute path inside the job's
spool folder (or under an allowed root), never an existing folder; contradicting v1 and
v2 settings are errors naming both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prsd.jobspec.model import DEFAULT_APPEND_ROW_FILE_NAME, OUTPUT_ACTIONS
from prsd.jobspec.paths import Roots, resolve
from prsd.jobspec.refs import Refs, exact_ref, has_ref, substitute, undefined
from prsd.jobspec.said import NOT_USED, note
from prsd.jobspec.values import as_choice, as_str
from prsd.spool.layout import JobLayout

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from prsd.jobspec.ports import Port
    from prsd.jobspec.yamlsafe import Setting, Site


@dataclass(frozen=True)
class OutputContext:
    """Where outputs go: the job's spool folder, roots, and the placed v2 outputs."""

    spool: Path
    roots: Roots
    ports: Mapping[str, Port]
    places: Mapping[str, Path]
    refs: Refs


@dataclass(frozen=True)
class OutputPlan:
    """The output action, the append_row file (absolute) and notes."""

    action: str
    append_row_to: str | None
    notes: tuple[str, ...] = field(default_factory=tuple)


def plan_output(settings: Mapping[str, Setting], ctx: OutputContext) -> OutputPlan:
    """Decide the output action and the append_row file.

    Raises:
        JobSpecError: contradicting settings, an undeclared output, a path leaving the
            job's spool folder or the allowed roots, or a path that is a folder.
    """
    target = settings.get("task.append_row_to")
    action = settings.get("output_action")
    file_name = settings.get("append_row_file_name")
    chosen = as_choice(action.value, action.site, OUTPUT_ACTIONS) if action else None
    if target is not None and target.value is not None:
        _refuse_both(chosen, action, file_name, target)
        return OutputPlan("append_row", str(_not_folder(_target(target, ctx), target.site)))
    if chosen != "append_row":
        notes: tuple[str, ...] = ()
        if file_name is not None:
            notes = (note(NOT_USED, f"{file_name.site.key}: the output action is summary_only"),)
        return OutputPlan("summary_only", None, notes)
    name = DEFAULT_APPEND_ROW_FILE_NAME
    if file_name is not None:
        name = _plain_name(file_name)
    path = JobLayout(ctx.spool, ctx.spool.name).outputs / name
    if action is not None:
        ctx.roots.check(path, action.site, output=True)
    return OutputPlan("append_row", str(_not_folder(path, action.site if action else None)))


def _refuse_both(
    chosen: str | None, action: Setting | None, file_name: Setting | None, target: Setting
) -> None:
    if action is not None and chosen == "summary_only":
        raise action.site.error(
            f"is summary_only, but {target.site.key} asks for append_row; keep one"
        )
    if file_name is not None:
        raise file_name.site.error(
            f"names the v1 append_row file, but {target.site.key} names the file; keep one"
        )


def _target(setting: Setting, ctx: OutputContext) -> Path:
    site = setting.site
    text = as_str(setting.value, site, "a file path or ${{outputs.NAME}}")
    ref = exact_ref(text)
    if ref is not None:
        section, _, name = ref.partition(".")
        if section == "inputs":
            raise site.error(f"${{{{{ref}}}}} is an input; expected ${{{{outputs.NAME}}}}")
        port = ctx.ports.get(name) if section == "outputs" else None
        if port is None:
            raise undefined(ref, site)
        place = ctx.places[name]
        return place if port.kind == "uri_file" else place / DEFAULT_APPEND_ROW_FILE_NAME
    if has_ref(text):
        text = substitute(text, ctx.refs, site)
    return resolve(ctx.spool, text, ctx.roots, site, what="job's spool folder", output=True)


def _plain_name(setting: Setting) -> str:
    name = as_str(setting.value, setting.site, "a file name")
    if "/" in name or "\\" in name or name in (".", ".."):
        raise setting.site.error(f"expected a file name without folders, got {name!r}")
    return name


def _not_folder(path: Path, site: Site | None) -> Path:
    if path.is_dir() and site is not None:
        raise site.error(f"{path} is a folder; the append_row output is one file")
    return path
