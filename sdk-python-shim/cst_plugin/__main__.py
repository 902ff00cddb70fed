"""`python -m cst_plugin manifest|build|vendor` — see docs/plugins-python.md."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import cst_plugin

PKG_DIR = Path(__file__).resolve().parent
WIT_DIR = PKG_DIR / "wit"


def load_app(app: Path):
    """Import the author's file so its @tool declarations register; returns (module, tools)."""
    if not app.is_file():
        sys.exit(f"error: {app}: no such file")
    cst_plugin.TOOLS.clear()
    sys.path.insert(0, str(app.parent))
    spec = importlib.util.spec_from_file_location(app.stem, app)
    if spec is None or spec.loader is None:
        sys.exit(f"error: {app}: cannot import")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not cst_plugin.TOOLS:
        sys.exit(f"error: {app}: declares no @tool functions")
    return module, dict(cst_plugin.TOOLS)


def cmd_manifest(a: argparse.Namespace) -> None:
    app = Path(a.app).resolve()
    module, tools = load_app(app)
    out = Path(a.output) if a.output else app.parent / "plugin.json"
    manifest = {}
    if out.exists():
        try:
            manifest = json.loads(out.read_text())
        except json.JSONDecodeError as e:
            sys.exit(f"error: {out}: not valid JSON (line {e.lineno}): {e.msg}; not overwritten")
    manifest.setdefault("name", a.name or app.parent.name)
    if a.description:
        manifest["description"] = a.description
    manifest.setdefault("description", (module.__doc__ or "").strip().split("\n")[0])
    rel = os.path.relpath(app, out.parent.resolve())
    entries = []
    for t in tools.values():
        e = {"name": t.name, "description": t.description, "command": [a.python, rel, t.name],
             "parameters": t.schema, "perm": t.perm}
        if t.timeout:
            e["timeout"] = t.timeout
        entries.append(e)
    manifest["tools"] = entries
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    os.replace(tmp, out)  # atomic: a crash never leaves a truncated plugin.json
    print(f"wrote {len(entries)} tool(s) to {out}")
    if a.vendor:
        vendor(out.parent)


def vendor(dest_dir: Path) -> None:
    """Copy this package next to the app so `python3 app.py` imports it without pip."""
    dest = dest_dir / "cst_plugin"
    if dest.resolve() == PKG_DIR:
        return
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(PKG_DIR, dest, ignore=shutil.ignore_patterns("__pycache__"))
    print(f"vendored cst_plugin into {dest}")


def cmd_build(a: argparse.Namespace) -> None:
    app = Path(a.app).resolve()
    try:
        import componentize_py  # noqa: F401
    except ImportError:
        sys.exit("error: componentize-py is not installed: pip install 'cst-plugin[wasm]'")
    load_app(app)  # fail early, with a Python traceback, if the file does not import
    out = Path(a.output).resolve()
    with tempfile.TemporaryDirectory(prefix="cst-plugin-build-") as tmp:
        entry = Path(tmp) / "cst_entry.py"
        entry.write_text(f"import {app.stem}  # registers the @tool functions\nfrom cst_plugin._component import Tool\n")
        cmd = [
            sys.executable, "-c", "import sys, componentize_py; sys.argv[0] = 'componentize-py'; sys.exit(componentize_py.script())", "-d", str(WIT_DIR), "-w", "plugin", "componentize", "cst_entry",
            "-p", tmp, "-p", str(PKG_DIR.parent), "-p", str(app.parent), "-o", str(out),
        ]
        try:
            subprocess.run(cmd, check=True)
        except subprocess.CalledProcessError as e:
            sys.exit(f"error: componentize-py failed with exit code {e.returncode}")
    print(f"built {out} ({out.stat().st_size // 1024} KiB)")


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m cst_plugin")
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("manifest", help="write the plugin.json `tools` entries for APP")
    m.add_argument("app")
    m.add_argument("-o", "--output", help="plugin.json to write (default: beside APP)")
    m.add_argument("--name")
    m.add_argument("--description")
    m.add_argument("--python", default="python3", help="interpreter in the command (default python3)")
    m.add_argument("--vendor", action="store_true", help="copy cst_plugin next to APP")
    m.set_defaults(func=cmd_manifest)
    b = sub.add_parser("build", help="build APP into a wasm component (needs componentize-py)")
    b.add_argument("app")
    b.add_argument("-o", "--output", required=True)
    b.set_defaults(func=cmd_build)
    v = sub.add_parser("vendor", help="copy cst_plugin into DIR")
    v.add_argument("dir")
    v.set_defaults(func=lambda a: vendor(Path(a.dir)))
    a = p.parse_args()
    a.func(a)


if __name__ == "__main__":
    main()
