"""Reading a YAML file that may be hostile, keeping the line of every key.

Guarantees: a file over :data:`MAX_FILE_BYTES` is refused before it is parsed; anchors
and aliases (the "billion laughs" expansion) are refused while composing, so no node is
ever shared; nesting deeper than :data:`MAX_DEPTH` is refused instead of exhausting the
stack; duplicate keys and non-string keys are errors; only YAML's safe scalar types are
built, and a tag on a list or mapping (``!!python/...``) is refused. Every failure is one :class:`~prsd.errors.JobSpecError` naming the file and line.

The result is plain data (dict, list, str, int, float, bool, None) plus a map from
dotted key paths (``task.environment.python``, ``input_data[1]``) to 1-based line numbers.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml
from yaml.composer import ComposerError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from prsd.errors import JobSpecError

if TYPE_CHECKING:
    from pathlib import Path

MAX_FILE_BYTES = 1024 * 1024
MAX_DEPTH = 64


@dataclass(frozen=True)
class Doc:
    """A parsed file: its data and where each key was written.

    Attributes:
        path: the file, as given (absolute).
        data: the plain data of the whole document.
        lines: dotted key path -> 1-based line of the key (or list item).
    """

    path: Path
    data: Any
    lines: dict[str, int]

    def line_of(self, key: str) -> int:
        """The line of ``key``, else of its nearest written parent, else 1."""
        probe = key
        while probe:
            if probe in self.lines:
                return self.lines[probe]
            probe = _parent_key(probe)
        return 1

    def location(self, key: str) -> str:
        """``/path/job.yaml:12`` for ``key``."""
        return f"{self.path}:{self.line_of(key)}"

    def error(self, key: str, problem: str) -> JobSpecError:
        """The error for ``key``, located at its line."""
        return JobSpecError(key, self.location(key), problem)

    def site(self, key: str) -> Site:
        """A handle on ``key`` for reading its value and reporting errors."""
        return Site(self, key)


@dataclass(frozen=True)
class Site:
    """A key as written in a file: the place every error about its value points at."""

    doc: Doc
    key: str
    label: str = ""  # what messages call the key, when not the key itself

    def error(self, problem: str) -> JobSpecError:
        """The error for this key (raise it)."""
        return JobSpecError(self.label or self.key, self.doc.location(self.key), problem)

    def labelled(self, label: str) -> Site:
        """This site, called ``label`` in messages (``task.program_arguments --run_max_try``)."""
        return Site(self.doc, self.key, label)

    def child(self, name: str) -> Site:
        """The site of ``name`` under this key."""
        return Site(self.doc, join_key(self.key, name))

    def item(self, index: int) -> Site:
        """The site of list item ``index`` under this key."""
        return Site(self.doc, f"{self.key}[{index}]")


@dataclass(frozen=True)
class Setting:
    """One value read from a spec and the key it was written under."""

    value: Any
    site: Site


def join_key(prefix: str, name: str) -> str:
    """``prefix.name``, or ``name`` when there is no prefix."""
    return f"{prefix}.{name}" if prefix else name


def _parent_key(key: str) -> str:
    if key.endswith("]"):
        return key[: key.rindex("[")]
    return key.rpartition(".")[0]


def read_yaml(path: Path, *, what: str = "job spec") -> Doc:
    """Read and parse ``path`` safely.

    Args:
        path: the file; it must be a regular file of at most 1 MiB.
        what: how to call the file in messages ("job spec", "MLTable").

    Raises:
        JobSpecError: unreadable, too large, not UTF-8, malformed YAML, an anchor or
            alias, too deep, a duplicate or non-string key, or an unsafe tag.
    """
    text = _decode(path, read_limited(path, MAX_FILE_BYTES, what=what), what)
    try:
        loader = _Loader(text)  # checks for unprintable characters first
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        problem = f"the character #x{exc.character:04x} is not allowed in YAML"
        raise JobSpecError("", f"{path}:{line}", problem) from None
    try:
        return _document(loader, path)
    except yaml.MarkedYAMLError as exc:
        raise _yaml_error(path, exc) from None
    except yaml.YAMLError as exc:
        raise JobSpecError("", str(path), f"malformed YAML: {exc}") from None
    finally:
        loader.dispose()


def _document(loader: _Loader, path: Path) -> Doc:
    root = loader.get_single_node()
    if root is None:
        return Doc(path, None, {})
    lines: dict[str, int] = {}
    data = _plain(loader, root, "", lines, path)
    return Doc(path, data, lines)


def read_limited(path: Path, limit: int, *, what: str) -> bytes:
    """The bytes of regular file ``path``, refusing it when over ``limit`` bytes.

    Opened non-blocking so a FIFO planted in place of the file cannot hang the reader.

    Raises:
        JobSpecError: missing, not a regular file, unreadable, or too large.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise JobSpecError("", str(path), f"cannot open the {what}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise JobSpecError("", str(path), f"the {what} is not a regular file")
        if info.st_size > limit:
            raise JobSpecError("", str(path), _too_large(what, info.st_size, limit))
        data = f.read(limit + 1)
    if len(data) > limit:
        raise JobSpecError("", str(path), _too_large(what, len(data), limit))
    return data


def _too_large(what: str, size: int, limit: int) -> str:
    return f"the {what} is {size} bytes; at most {limit} bytes are accepted"


def _decode(path: Path, data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        where = f"byte {exc.start}"
        raise JobSpecError("", str(path), f"the {what} is not UTF-8 text ({where})") from None


def _yaml_error(path: Path, exc: yaml.MarkedYAMLError) -> JobSpecError:
    mark = exc.problem_mark or exc.context_mark
    where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
    problem = exc.problem or exc.context or "not valid YAML"
    return JobSpecError("", where, f"malformed YAML: {problem}")


class _Loader(yaml.SafeLoader):
    """A SafeLoader whose composer refuses anchors, aliases and deep nesting."""

    _depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in the stubs
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise ComposerError(
                None,
                None,
                "YAML anchors and aliases (&name, *name, <<: merges) are not accepted; "
                "write the values out",
                event.start_mark,
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise ComposerError(
                    None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_COLLECTION_TAGS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}


def _plain(loader: _Loader, node: Node, key: str, lines: dict[str, int], path: Path) -> Any:
    if not isinstance(node, ScalarNode) and node.tag not in _COLLECTION_TAGS:
        # ``!!python/object/apply:os.system [id]``: SafeLoader would never run it, but a
        # tag that silently means nothing is as confusing as it is hostile.
        where = f"{path}:{node.start_mark.line + 1}"
        raise JobSpecError(key, where, f"the YAML tag {node.tag!r} is not accepted")
    if isinstance(node, MappingNode):
        return _plain_mapping(loader, node, key, lines, path)
    if isinstance(node, SequenceNode):
        items = []
        for i, child in enumerate(node.value):
            child_key = f"{key}[{i}]"
            lines[child_key] = child.start_mark.line + 1
            items.append(_plain(loader, child, child_key, lines, path))
        return items
    return _scalar(loader, node, key, path)


def _scalar(loader: _Loader, node: Node, key: str, path: Path) -> Any:
    try:
        return loader.construct_object(node, deep=True)
    except (ValueError, OverflowError) as exc:
        # int() of 5000 digits, a date like 2024-13-45: PyYAML lets these escape.
        where = f"{path}:{node.start_mark.line + 1}"
        reason = str(exc).split(":")[0]
        raise JobSpecError(key, where, f"cannot read the value ({reason})") from None


def _plain_mapping(
    loader: _Loader, node: MappingNode, key: str, lines: dict[str, int], path: Path
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        name = _scalar(loader, key_node, key, path) if isinstance(key_node, ScalarNode) else None
        if not isinstance(name, str):
            where = join_key(key, str(name)) if name is not None else key
            raise JobSpecError(where, f"{path}:{line}", "keys must be strings")
        child_key = join_key(key, name)
        if name in out:
            first = lines.get(child_key, line)
            raise JobSpecError(
                child_key, f"{path}:{line}", f"duplicate key (first written on line {first})"
            )
        lines[child_key] = line
        out[name] = _plain(loader, value_node, child_key, lines, path)
    return out
