"""Tests of the Python shim: schema derivation, classic mode, manifest generation (issue 7)."""

import enum
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path
from typing import List, Literal, Optional

SHIM = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(SHIM))

import cst_plugin  # noqa: E402
from cst_plugin.schema import SchemaError, function_schema  # noqa: E402


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class SchemaDerivation(unittest.TestCase):
    def test_scalar_list_optional_enum_types(self):
        def f(name: str, count: int, ratio: float, flag: bool, tags: List[str], more: list[int],
              maybe: Optional[int], mode: Literal["fast", "slow"], color: Color = Color.RED, opt2: str | None = None):
            """Do things.

            Args:
                name: who to greet.
                count: how many
                    times, continued.
            """

        schema, desc = function_schema(f)
        props = schema["properties"]
        self.assertEqual(desc, "Do things.")
        self.assertEqual(props["name"], {"type": "string", "description": "who to greet."})
        self.assertEqual(props["count"]["type"], "integer")
        self.assertEqual(props["count"]["description"], "how many times, continued.")
        self.assertEqual(props["ratio"], {"type": "number"})
        self.assertEqual(props["flag"], {"type": "boolean"})
        self.assertEqual(props["tags"], {"type": "array", "items": {"type": "string"}})
        self.assertEqual(props["more"], {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(props["maybe"], {"anyOf": [{"type": "integer"}, {"type": "null"}]})
        self.assertEqual(props["mode"], {"enum": ["fast", "slow"]})
        self.assertEqual(props["color"], {"enum": ["red", "blue"], "default": "red"})
        self.assertEqual(props["opt2"], {"anyOf": [{"type": "string"}, {"type": "null"}]})
        self.assertEqual(schema["required"], ["name", "count", "ratio", "flag", "tags", "more", "mode"])
        self.assertFalse(schema["additionalProperties"])

    def test_missing_hint_and_unsupported_type_are_errors(self):
        def no_hint(x):
            pass

        def bad(x: set):
            pass

        with self.assertRaises(SchemaError):
            function_schema(no_hint)
        with self.assertRaisesRegex(SchemaError, "bad.x"):
            function_schema(bad)

    def test_decorator_checks_perm_and_name(self):
        with self.assertRaises(ValueError):
            cst_plugin.tool(perm="root")
        with self.assertRaises(ValueError):
            cst_plugin.tool(name="bad name")(lambda: None)

    def test_enum_argument_is_converted(self):
        cst_plugin.TOOLS.clear()

        @cst_plugin.tool(perm="read")
        def paint(color: Color) -> str:
            return f"{type(color).__name__}.{color.name}"

        self.assertEqual(cst_plugin.call("paint", '{"color": "blue"}'), "Color.BLUE")
        cst_plugin.TOOLS.clear()


APP = textwrap.dedent('''
    """Test app."""
    from cst_plugin import tool, ToolError

    @tool(perm="read")
    def add(a: int, b: int = 2) -> dict:
        """Add two numbers."""
        return {"sum": a + b}

    @tool(perm="write")
    def boom(message: str) -> str:
        """Always fails."""
        raise RuntimeError(message)

    if __name__ == "__main__":
        import cst_plugin
        cst_plugin.main()
''')


class ClassicMode(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        (self.dir / "app.py").write_text(APP)
        self.env = dict(os.environ, PYTHONPATH=str(SHIM))

    def run_tool(self, tool, payload):
        return subprocess.run([sys.executable, str(self.dir / "app.py"), tool], input=payload, text=True,
                              capture_output=True, env=self.env, cwd=self.dir)

    def test_stdin_json_to_stdout(self):
        r = self.run_tool("add", '{"a": 40}')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), {"sum": 42})

    def test_exception_is_failure_with_message(self):
        r = self.run_tool("boom", '{"message": "disk on fire"}')
        self.assertEqual(r.returncode, 1)
        self.assertIn("RuntimeError: disk on fire", r.stderr)

    def test_manifest_writes_tools_and_keeps_other_keys(self):
        (self.dir / "plugin.json").write_text(json.dumps({"name": "mine", "skills": "skills"}))
        r = subprocess.run([sys.executable, "-m", "cst_plugin", "manifest", str(self.dir / "app.py")],
                           capture_output=True, text=True, env=self.env, cwd=SHIM)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = json.loads((self.dir / "plugin.json").read_text())
        self.assertEqual(m["name"], "mine")
        self.assertEqual(m["skills"], "skills")
        add, boom = m["tools"]
        self.assertEqual(add["command"], ["python3", "app.py", "add"])
        self.assertEqual(add["perm"], "read")
        self.assertEqual(add["parameters"]["required"], ["a"])
        self.assertEqual(boom["perm"], "write")

    def test_manifest_refuses_to_overwrite_broken_json(self):
        (self.dir / "plugin.json").write_text('{"name": ')
        r = subprocess.run([sys.executable, "-m", "cst_plugin", "manifest", str(self.dir / "app.py")],
                           capture_output=True, text=True, env=self.env, cwd=SHIM)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not overwritten", r.stderr)
        self.assertEqual((self.dir / "plugin.json").read_text(), '{"name": ')


class ShippedWit(unittest.TestCase):
    def test_package_wit_is_the_project_wit(self):
        shipped = (SHIM / "cst_plugin" / "wit" / "plugin.wit").read_text()
        project = (SHIM.parent / "wit" / "v0.1.0" / "plugin.wit").read_text()
        self.assertEqual(shipped, project, "sdk-python-shim/cst_plugin/wit/plugin.wit is out of date: copy wit/v0.1.0/plugin.wit")


if __name__ == "__main__":
    unittest.main()
