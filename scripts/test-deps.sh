#!/usr/bin/env bash
# Installs everything the tests need on a fresh machine (idempotent), then builds the example
# plugins. Registries only: rustup targets, apt (bubblewrap), npm and PyPI packages.
set -euo pipefail
cd "$(dirname "$0")/.."

rustup target add wasm32-wasip2 >/dev/null

# bubblewrap: the process sandbox of run_shell and command tools (P11, issue 13). The host runs
# only /usr/bin/bwrap, so it comes from the system's packages (Debian's `bubblewrap`).
if [ "$(uname -s)" = Linux ] && [ ! -x /usr/bin/bwrap ] && command -v apt-get >/dev/null; then
  apt-get update -qq && apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
fi

# tmux: the pseudo-terminal of the TUI's end-to-end test (host/tests/tui_e2e.rs).
if ! command -v tmux >/dev/null && command -v apt-get >/dev/null; then
  apt-get update -qq && apt-get install -y -qq --no-install-recommends tmux >/dev/null
fi

# Chromium and playwright-core: the admin page's browser test (host/tests/admin_browser.rs).
# Debian's chromium, not playwright's own download; playwright-core into target/ (never committed).
if [ "$(uname -s)" = Linux ] && [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null; then
  apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
BROWSER_PEERS=target/browser-peers
if [ ! -d "$BROWSER_PEERS/node_modules/playwright-core" ]; then
  mkdir -p "$BROWSER_PEERS"
  npm install --silent --no-audit --no-fund --prefix "$BROWSER_PEERS" playwright-core@1.65.1
fi

# Third-party MCP servers for the MCP tests (M*), installed into target/ (never committed).
PEERS=target/mcp-peers
mkdir -p "$PEERS"
if [ ! -x "$PEERS/node_modules/.bin/mcp-server-everything" ]; then
  npm install --silent --no-audit --no-fund --prefix "$PEERS" @modelcontextprotocol/server-everything@2026.8.31
fi
if [ ! -x "$PEERS/venv/bin/mcp-server-time" ]; then
  python3 -m venv "$PEERS/venv"
  "$PEERS/venv/bin/pip" install -q mcp-server-time
fi

# MCP clients that drive `cst-agent mcp serve` (host/tests/mcp_serve.rs) and the Python MCP
# server of its benchmark: the Python SDK, pinned to 2.3, in a venv of its own, and the MCP
# inspector's CLI.
CLIENTS=target/mcp-clients
mkdir -p "$CLIENTS"
if [ ! -x "$CLIENTS/venv/bin/python" ] || ! "$CLIENTS/venv/bin/python" -c 'import mcp' 2>/dev/null; then
  python3 -m venv "$CLIENTS/venv"
  "$CLIENTS/venv/bin/pip" install -q 'mcp==2.3.*'
fi
if [ ! -x "$CLIENTS/node_modules/.bin/mcp-inspector" ]; then
  npm install --silent --no-audit --no-fund --prefix "$CLIENTS" @modelcontextprotocol/inspector@2.12.0
fi

# The Python shim with componentize-py, for the Python example's wasm build (issue 7).
PYVENV=target/py-venv
if [ ! -x "$PYVENV/bin/componentize-py" ]; then
  python3 -m venv "$PYVENV"
  "$PYVENV/bin/pip" install -q './sdk-python-shim[wasm]'
fi

bash example-plugins/build.sh
PYTHON="$PWD/$PYVENV/bin/python" bash example-plugins/csv-summary/build.sh
