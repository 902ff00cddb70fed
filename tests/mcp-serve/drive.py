"""Drive `cst-agent mcp serve` with the Python `mcp` SDK's client (2.3) and print what it saw as
one JSON object on stdout; host/tests/mcp_serve.rs runs it and checks the report.

    drive.py --mode auto|legacy --url http://127.0.0.1:PORT/mcp
    drive.py --mode auto|legacy -- cst-agent --workspace WS mcp serve [...]

Environment: CST_SERVE_INSTALL, a shell command run once the tools are listed (it installs a
plugin, so the client must hear `notifications/tools/list_changed`). The stdio server gets
XDG_CONFIG_HOME, XDG_CACHE_HOME, CST_LOG, HOME and PATH passed through (the SDK gives a child
only a short allow-list of variables).
"""

import argparse
import json
import os
import subprocess
import sys

import anyio
from mcp import Client, StdioServerParameters


def text_of(result):
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def call(client, name, args, timeout=60):
    """A call's outcome: {"is_error", "text"} or {"error"} for a protocol error."""
    try:
        with anyio.fail_after(timeout):
            r = await client.call_tool(name, args)
        return {"is_error": bool(r.is_error), "text": text_of(r)}
    except Exception as e:  # a JSON-RPC error: what the report is for
        return {"error": f"{type(e).__name__}: {e}"}


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="auto")
    ap.add_argument("--url")
    ap.add_argument("--skip", default="", help="comma-separated steps to skip")
    ap.add_argument("cmd", nargs="*")
    a = ap.parse_args()
    skip = set(filter(None, a.skip.split(",")))

    changed = anyio.Event()

    async def on_message(message):
        if "list_changed" in repr(message) or "ToolListChanged" in repr(message):
            changed.set()

    if a.url:
        target = a.url
    else:
        keep = ["XDG_CONFIG_HOME", "XDG_CACHE_HOME", "CST_LOG", "HOME", "PATH"]
        env = {k: os.environ[k] for k in keep if k in os.environ}
        target = StdioServerParameters(command=a.cmd[0], args=a.cmd[1:], env=env)

    report = {}
    async with Client(target, mode=a.mode, message_handler=on_message, cache=None) as client:
        report["protocol"] = client.protocol_version
        report["server"] = client.server_info.name if client.server_info else None

        # Every page, following nextCursor.
        tools, cursor, pages = {}, None, 0
        while True:
            page = await client.list_tools(cursor=cursor)
            pages += 1
            for t in page.tools:
                ann = t.annotations
                if t.name == "skill":
                    report["skill_description"] = t.description
                tools[t.name] = {
                    "readOnlyHint": ann.read_only_hint if ann else None,
                    "destructiveHint": ann.destructive_hint if ann else None,
                }
            cursor = page.next_cursor
            if not cursor or pages > 50:
                break
        report["pages"], report["tools"] = pages, tools

        report["wasm"] = await call(client, "text_stats", {"paths": ["notes.txt"]})
        report["command"] = await call(client, "shout", {"text": "quiet please"})
        report["skill"] = await call(client, "skill", {"name": "greeting"})
        report["failing"] = await call(client, "text_stats", {"paths": ["missing.txt"]})
        report["invalid"] = await call(client, "text_stats", {"paths": "notes.txt"})
        report["unknown"] = await call(client, "no_such_tool", {})
        report["outside_allow"] = await call(client, "write_outside", {})
        report["outside_workspace"] = await call(client, "hostile_read", {"path": "/etc/hostname"})
        report["dotdot"] = await call(client, "text_stats", {"paths": ["../secret.txt"]})
        report["wasm_write_outside"] = await call(client, "hostile_write", {"path": "../escaped.txt", "content": "x"})

        if "cancel" not in skip:
            # Abandon running calls: the SDK sends notifications/cancelled for each.
            for name in ["hostile_spin", "wait_then_mark"]:
                with anyio.move_on_after(1.0) as scope:
                    await client.call_tool(name, {})
                report[f"cancel_{name}"] = {"abandoned": scope.cancelled_caught}
            report["after_cancel"] = await call(client, "text_stats", {"paths": ["notes.txt"]})

        install = os.environ.get("CST_SERVE_INSTALL")
        if install and "list_changed" not in skip:
            if client.protocol_version == "2026-07-28":
                # The modern era hears changes on a subscriptions/listen stream.
                async with client.listen(tools_list_changed=True) as sub:
                    subprocess.run(install, shell=True, check=True, stdout=sys.stderr)
                    with anyio.move_on_after(20):
                        async for _event in sub:
                            changed.set()
                            break
            else:
                subprocess.run(install, shell=True, check=True, stdout=sys.stderr)
                with anyio.move_on_after(20):
                    await changed.wait()
            report["list_changed"] = changed.is_set()
            listed = await client.list_tools()
            names = [t.name for t in listed.tools]
            while listed.next_cursor:
                listed = await client.list_tools(cursor=listed.next_cursor)
                names += [t.name for t in listed.tools]
            report["tools_after_install"] = names
    print(json.dumps(report))


anyio.run(main)
