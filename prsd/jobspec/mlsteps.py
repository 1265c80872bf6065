"""An MLTable's transformations after its reader, checked and written as plain steps.

Pure. Each transformation prsd applies becomes a JSON-ready dict (``{"op": ...}``)
kept in ``InputSpec.steps``, in the file's order; the leader applies them
(:mod:`prsd.inputsplit.tabular.mlapply`) so that the rows and columns ``run()`` sees are
those of ``mltable.load(folder).to_pandas_dataframe()``. Any other transformation,
or one of these with options prsd cannot honour, is an error naming the
transformation and the MLTable file: nothing is skipped.

Applied:

- ``extract_columns_from_partition_format: {partition_format: "{year}/{store}/data.csv"}``
  (text columns from each file's path, appended at the end);
- ``drop_columns`` / ``keep_columns``: a column name or a list of them;
- ``take: N`` / ``skip: N``: rows of the whole table, in order;
- ``filter: 'col("a") > 1'``: one comparison (``==``, ``!=``, ``<``, ``<=``, ``>``,
  ``>=``) of a column with a number, a quoted string, ``true``/``false`` or ``null``;
- ``convert_column_types: [{columns: [a, b], column_type: int}]`` with the simple
  types ``int``, ``float``, ``string``, ``boolean`` and ``datetime``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from prsd.jobspec.values import as_int, as_mapping, as_str, shown

if TYPE_CHECKING:
    from prsd.jobspec.yamlsafe import Site

APPLIED = (
    "extract_columns_from_partition_format",
    "drop_columns",
    "keep_columns",
    "take",
    "skip",
    "filter",
    "convert_column_types",
)
COLUMN_TYPES = ("int", "float", "string", "boolean", "datetime")
_FILTER = re.compile(
    r"""^\s*col\(\s*(?P<q>["'])(?P<column>.+?)(?P=q)\s*\)\s*"""
    r"""(?P<op>==|!=|<=|>=|<|>)\s*(?P<value>.+?)\s*$"""
)
_NUMBER = re.compile(r"^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
_FIELD = re.compile(r"\{([^{}]+)\}")


def read_step(name: str, args: Any, site: Site, where: str) -> dict[str, Any]:
    """One transformation as a step.

    Args:
        name: the transformation's name.
        args: its value in the MLTable file.
        site: where it is (for errors).
        where: the MLTable file, named in errors.

    Raises:
        JobSpecError: a transformation prsd does not apply, or options it cannot honour.
    """
    if name not in APPLIED:
        raise site.error(
            f"transformation {name} in {where} is not supported by prsd (supported after "
            f"the reader: {', '.join(APPLIED)}); remove it or apply it in run()"
        )
    reader = _READERS[name]
    step: dict[str, Any] = reader(args, site.child(name), where)
    step["op"] = name
    return step


def _columns(args: Any, site: Site, where: str) -> dict[str, Any]:
    if isinstance(args, str):
        return {"columns": [args]}
    if isinstance(args, list) and args and all(isinstance(c, str) for c in args):
        return {"columns": list(args)}
    if isinstance(args, dict) and "columns" in args and set(args) == {"columns"}:
        return _columns(args["columns"], site.child("columns"), where)
    raise site.error(f"expected a column name or a list of them, got {shown(args)} ({where})")


def _count(args: Any, site: Site, where: str) -> dict[str, Any]:
    return {"count": as_int(args, site, minimum=0, expected="a count of rows")}


def _filter(args: Any, site: Site, where: str) -> dict[str, Any]:
    text = as_str(args, site, "an expression like 'col(\"a\") > 1'")
    match = _FILTER.match(text)
    value = _literal(match["value"]) if match is not None else _NOT_A_VALUE
    if match is None or value is _NOT_A_VALUE:
        raise site.error(
            f"{text!r} in {where}: prsd applies one comparison of a column with a number, a "
            "quoted string, true, false or null, like 'col(\"age\") >= 18' or "
            '\'col("city") == "Paris"\'; filter in run() instead'
        )
    return {"column": match["column"], "cmp": match["op"], "value": value}


_NOT_A_VALUE = object()


def _literal(text: str) -> Any:
    if text in ("true", "True"):
        return True
    if text in ("false", "False"):
        return False
    if text in ("null", "None"):
        return None
    if _NUMBER.match(text):
        return float(text) if any(c in text for c in ".eE") else int(text)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" and text[0] not in text[1:-1]:
        return text[1:-1]
    return _NOT_A_VALUE


def _partition(args: Any, site: Site, where: str) -> dict[str, Any]:
    mapping = as_mapping(args, site, "{partition_format: '{column}/...'}")
    unknown = set(mapping) - {"partition_format", "path_column", "ignore_errors"}
    if unknown or "partition_format" not in mapping:
        raise site.error(f"expected partition_format (and path_column, ignore_errors) ({where})")
    fmt = as_str(mapping["partition_format"], site.child("partition_format"), "a format")
    if not _FIELD.search(fmt):
        raise site.child("partition_format").error("names no {column}")
    return {
        "format": fmt,
        "ignore_errors": bool(mapping.get("ignore_errors", False)),
    }


def _convert(args: Any, site: Site, where: str) -> dict[str, Any]:
    entries = args if isinstance(args, list) else [args]
    out: list[dict[str, Any]] = []
    for i, entry in enumerate(entries):
        here = site.item(i)
        mapping = as_mapping(entry, here, "{columns: [...], column_type: int}")
        if set(mapping) != {"columns", "column_type"}:
            raise here.error(f"expected columns and column_type ({where})")
        kind = mapping["column_type"]
        if not isinstance(kind, str) or kind not in COLUMN_TYPES:
            raise here.child("column_type").error(
                f"{shown(kind)} in {where}: prsd converts to the simple types "
                f"{', '.join(COLUMN_TYPES)} only"
            )
        columns = _columns(mapping["columns"], here.child("columns"), where)["columns"]
        out.append({"columns": columns, "type": kind})
    return {"conversions": out}


_READERS = {
    "extract_columns_from_partition_format": _partition,
    "drop_columns": _columns,
    "keep_columns": _columns,
    "take": _count,
    "skip": _count,
    "filter": _filter,
    "convert_column_types": _convert,
}
