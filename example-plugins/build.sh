#!/bin/sh
# Build every example plugin to a wasm32-wasip2 component and copy each .wasm next to its plugin.json.
set -eu
cd "$(dirname "$0")"
rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
cargo build --release --target wasm32-wasip2
out=target/wasm32-wasip2/release
for dir in text-stats json-query regex-search hostile-test; do
    cp "$out/$(echo "$dir" | tr - _).wasm" "$dir/$dir.wasm"
done
echo "built: text-stats json-query regex-search hostile-test (+ test-only: test_other_world, test_future_version, test_bad_tools in $out)"
