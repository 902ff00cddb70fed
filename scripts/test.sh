#!/usr/bin/env bash
# The test command of the README: install what the tests need, then run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/test-deps.sh
python3 -m unittest discover -s sdk-python-shim/tests
cargo test --workspace
