#!/usr/bin/env bash
# The main job: build cst-agent and the example plugins, install them into your config dir
# (~/.config/cst-agent, or $XDG_CONFIG_HOME/cst-agent) and call each tool once.
set -euo pipefail
cd "$(dirname "$0")/.."

rustup target add wasm32-wasip2 >/dev/null
bash example-plugins/build.sh
# The Python example as plugin.json command tools (cst_plugin vendored beside app.py).
(cd sdk-python-shim && python3 -m cst_plugin manifest ../example-plugins/csv-summary/app.py --vendor)
cargo build --release -p cst-agent
cst=target/release/cst-agent

for p in text-stats json-query regex-search csv-summary; do
  "$cst" plugins install "example-plugins/$p"
done
"$cst" plugins list
"$cst" tools list

run() { echo; echo "\$ cst-agent tools call $1 --args '$2'"; "$cst" --workspace . tools call "$1" --args "$2"; }
run text_stats   '{"paths": ["README.md", "wit"]}'
run json_query   '{"file": "example-plugins/text-stats/plugin.json", "path": "capabilities[0]"}'
run regex_search '{"pattern": "wasmtime", "path": "docs", "max_results": 5}'
run csv_summary  '{"path": "example-plugins/csv-summary/sample.csv"}'
