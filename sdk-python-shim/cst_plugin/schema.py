"""JSON Schema derived from a function's type hints and docstring."""

from __future__ import annotations

import enum
import inspect
import re
import types
import typing
from typing import Any, Callable, get_args, get_origin

_SIMPLE = {str: "string", int: "integer", float: "number", bool: "boolean"}


class SchemaError(TypeError):
    """A parameter whose type cannot be expressed as JSON Schema."""


def type_schema(tp: Any, where: str) -> dict:
    """JSON Schema of one annotation."""
    if tp in _SIMPLE:
        return {"type": _SIMPLE[tp]}
    if tp is dict or get_origin(tp) is dict:
        return {"type": "object"}
    if tp is list or tp is tuple:
        return {"type": "array"}
    if inspect.isclass(tp) and issubclass(tp, enum.Enum):
        values = [m.value for m in tp]
        return {"enum": values}
    origin = get_origin(tp)
    args = get_args(tp)
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (list, typing.List, tuple) and args:
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            raise SchemaError(f"{where}: only tuple[T, ...] is supported")
        return {"type": "array", "items": type_schema(args[0], where)}
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            inner = type_schema(rest[0], where)
            if len(rest) != len(args):  # Optional[T]: null is allowed too
                return {"anyOf": [inner, {"type": "null"}]}
            return inner
        return {"anyOf": [type_schema(a, where) for a in args]}
    raise SchemaError(f"{where}: type {tp!r} has no JSON Schema mapping (use str, int, float, bool, list[T], Optional[T], Literal or Enum)")


def _is_optional(tp: Any) -> bool:
    return get_origin(tp) in (typing.Union, types.UnionType) and type(None) in get_args(tp)


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Description (text before an `Args:` section) and per-parameter descriptions (Google style)."""
    if not doc:
        return "", {}
    doc = inspect.cleandoc(doc)
    parts = re.split(r"^\s*(?:Args|Arguments|Parameters):\s*$", doc, maxsplit=1, flags=re.M)
    description = " ".join(parts[0].split())
    params: dict[str, str] = {}
    if len(parts) == 2:
        current = None
        for line in parts[1].splitlines():
            m = re.match(r"^\s{0,8}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", line)
            if m and not line.startswith(" " * 9):
                current = m.group(1)
                params[current] = m.group(2).strip()
            elif re.match(r"^\s*(Returns|Raises|Yields|Examples?):", line):
                break
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
    return description, params


def function_schema(func: Callable) -> tuple[dict, str]:
    """(input schema, description) of a tool function."""
    hints = typing.get_type_hints(func)
    description, param_docs = parse_docstring(func.__doc__)
    props: dict[str, Any] = {}
    required: list[str] = []
    for name, param in inspect.signature(func).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise SchemaError(f"{func.__name__}: *args/**kwargs cannot be tool parameters")
        if name not in hints:
            raise SchemaError(f"{func.__name__}: parameter `{name}` needs a type hint")
        tp = hints[name]
        schema = dict(type_schema(tp, f"{func.__name__}.{name}"))
        if name in param_docs and param_docs[name]:
            schema["description"] = param_docs[name]
        if param.default is not inspect.Parameter.empty:
            default = param.default
            if isinstance(default, enum.Enum):
                default = default.value
            if default is not None:
                schema["default"] = default
        elif not _is_optional(tp):
            required.append(name)
        props[name] = schema
    out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        out["required"] = required
    return out, description


def convert_args(func: Callable, args: dict) -> dict:
    """Turn decoded JSON into the Python values the hints ask for (Enum members, tuples)."""
    hints = typing.get_type_hints(func)
    out = {}
    for name, value in args.items():
        tp = hints.get(name)
        if _is_optional(tp):
            rest = [a for a in get_args(tp) if a is not type(None)]
            tp = rest[0] if len(rest) == 1 else None
        if value is not None and inspect.isclass(tp) and issubclass(tp, enum.Enum):
            value = tp(value)
        elif value is not None and get_origin(tp) is tuple:
            value = tuple(value)
        out[name] = value
    return out
