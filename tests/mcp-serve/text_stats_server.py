"""The text-stats example plugin's work, served by the Python `mcp` SDK (2.3, `MCPServer`, the
FastMCP of 1.x) over stdio: the comparison row of the `mcp-serve` bench section.

    python text_stats_server.py WORKSPACE

Files only (no folder walk): the bench counts one file. Paths stay inside WORKSPACE.
"""

import json
import os
import sys

from mcp.server.mcpserver import MCPServer

WORKSPACE = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else ".")
server = MCPServer("text-stats-py")


@server.tool(structured_output=False)
def text_stats(paths: list[str]) -> str:
    """Count lines, words and bytes of workspace files. Returns JSON with one entry per file and a total."""
    files, total = {}, {"bytes": 0, "files": 0, "lines": 0, "words": 0}
    for p in paths:
        full = os.path.realpath(os.path.join(WORKSPACE, p))
        if not full.startswith(WORKSPACE + os.sep):
            raise ValueError(f"{p}: outside the workspace")
        with open(full, "rb") as f:
            data = f.read()
        entry = {"bytes": len(data), "lines": data.count(b"\n"), "words": len(data.split())}
        files[p] = entry
        for k in ("bytes", "lines", "words"):
            total[k] += entry[k]
        total["files"] += 1
    return json.dumps({"files": files, "total": total, "truncated": False}, indent=2, sort_keys=True)


if __name__ == "__main__":
    server.run("stdio")
