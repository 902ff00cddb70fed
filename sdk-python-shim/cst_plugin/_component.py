"""The wasm side: implements the `tool` export of the cst:plugin world for componentize-py.

`python -m cst_plugin build` generates a module that imports the author's file and then this
module's `Tool` class, which componentize-py wires to the component's exports.
"""

import json

import cst_plugin
from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import tool as wit_tool
from wit_world.imports import host

_PERMS = {"read": wit_tool.Perm.READ, "write": wit_tool.Perm.WRITE, "net": wit_tool.Perm.NET, "shell": wit_tool.Perm.SHELL}
_LEVELS = {
    "trace": host.Level.TRACE, "debug": host.Level.DEBUG, "info": host.Level.INFO,
    "warn": host.Level.WARN, "error": host.Level.ERROR,
}


def _log(level: str, message: str) -> None:
    host.log(_LEVELS.get(level, host.Level.INFO), message)


cst_plugin._wasm_log = _log


class Tool(exports.Tool):
    def list_tools(self):
        return [
            wit_tool.ToolInfo(name=t.name, description=t.description, input_schema=json.dumps(t.schema), perm=_PERMS[t.perm])
            for t in cst_plugin.TOOLS.values()
        ]

    def call_tool(self, name, arguments):
        try:
            return cst_plugin.call(name, arguments)
        except Exception as exc:
            raise Err(cst_plugin.error_message(exc))
