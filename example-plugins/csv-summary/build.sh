#!/usr/bin/env bash
# Builds the Python example both ways: plugin.json command tools (with cst_plugin vendored)
# and a wasm component (componentize-py). PYTHON may name the interpreter that has cst-plugin[wasm].
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
PY="${PYTHON:-python3}"
# Run from the shim's folder so `-m cst_plugin` is the shim, not a vendored copy.
cd "$here/../../sdk-python-shim"
"$PY" -m cst_plugin manifest "$here/app.py" --vendor
"$PY" -m cst_plugin build "$here/app.py" -o "$here/wasm/csv_summary.wasm"
