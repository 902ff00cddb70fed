"""Write cst-agent plugin tools in Python.

    from cst_plugin import tool

    @tool(perm="read")
    def word_count(path: str) -> str:
        '''Count the words of a workspace file.'''
        ...

    if __name__ == "__main__":
        import cst_plugin; cst_plugin.main()

The same file runs as a plugin.json command (`python3 app.py word_count`, JSON on stdin) and,
built by `python -m cst_plugin build app.py -o app.wasm`, as a wasm component.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable

from .schema import SchemaError, convert_args, function_schema

__all__ = ["tool", "ToolDef", "TOOLS", "ToolError", "main", "log", "call", "SchemaError"]

PERMS = ("read", "write", "net", "shell")
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,63}$")


class ToolError(Exception):
    """Raise it for an expected failure: the message goes to the model without a traceback."""


@dataclass
class ToolDef:
    name: str
    description: str
    perm: str
    schema: dict
    func: Callable
    timeout: int | None = None


# Tools in declaration order, by name.
TOOLS: dict[str, ToolDef] = {}


def tool(_func: Callable | None = None, *, perm: str = "shell", name: str | None = None,
         description: str | None = None, timeout: int | None = None):
    """Declare a tool. `perm` is its permission category: read, write, net or shell (P6)."""
    if perm not in PERMS:
        raise ValueError(f"perm must be one of {', '.join(PERMS)}, not {perm!r}")

    def wrap(func: Callable) -> Callable:
        tool_name = name or func.__name__
        if not _NAME_RE.match(tool_name):
            raise ValueError(f"tool name {tool_name!r} must match [A-Za-z0-9_-] and be at most 63 bytes")  # P2
        if tool_name in TOOLS:
            raise ValueError(f"tool {tool_name!r} is declared twice")
        schema, doc = function_schema(func)
        TOOLS[tool_name] = ToolDef(tool_name, description or doc or tool_name, perm, schema, func, timeout)
        return func

    return wrap(_func) if _func is not None else wrap


def _render(result: Any) -> str:
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    return json.dumps(result, indent=2, ensure_ascii=False)


def call(name: str, arguments: str) -> str:
    """Run tool `name` with JSON `arguments`; raises on failure (both modes share this)."""
    if name not in TOOLS:
        raise ToolError(f"unknown tool {name!r}; this plugin has: {', '.join(TOOLS) or 'none'}")
    t = TOOLS[name]
    args = json.loads(arguments) if arguments.strip() else {}
    if not isinstance(args, dict):
        raise ToolError("arguments must be a JSON object")
    return _render(t.func(**convert_args(t.func, args)))


def error_message(exc: BaseException) -> str:
    if isinstance(exc, ToolError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


_wasm_log: Callable[[str, str], None] | None = None


def log(level: str, message: str) -> None:
    """Write to the host's log (never into the result). Levels: trace, debug, info, warn, error."""
    if _wasm_log is not None:
        _wasm_log(level, message)
    else:
        print(f"[{level}] {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    """Classic mode (P8–P10): `python3 app.py TOOL` with the JSON object on stdin."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        if len(TOOLS) != 1:
            print(f"usage: {sys.argv[0]} TOOL (one of: {', '.join(TOOLS)})", file=sys.stderr)
            sys.exit(2)
        argv = [next(iter(TOOLS))]
    # The host starts a tool in its plugin folder while the workspace is untrusted (T1): paths
    # the model gives are the workspace's, so resolve them there (every import is done by now).
    workspace = os.environ.get("CST_WORKSPACE")
    if workspace:
        try:
            os.chdir(workspace)
        except OSError as exc:
            print(f"error: cannot enter the workspace {workspace}: {exc}", file=sys.stderr)
            sys.exit(1)
    try:
        out = call(argv[0], sys.stdin.read())
    except Exception as exc:  # every failure becomes a tool failure with its message
        print(f"error: {error_message(exc)}", file=sys.stderr)
        sys.exit(1)
    # Exactly the result, like the component returns it (no newline added).
    sys.stdout.write(out)
