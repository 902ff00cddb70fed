#!/usr/bin/env bash
# The Windows build, run for real: cross-compiles the host for x86_64-pc-windows-gnu and runs
# host/tests/windows_wine.rs under Wine (cargo's runner), sharing the Linux target dir.
# Needs the example plugins built for wasm32-wasip2 (example-plugins/build.sh; scripts/test.sh
# does it). Runs alone too: `bash scripts/windows-tests.sh`. docs/windows.md says what it proves.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
TARGET=x86_64-pc-windows-gnu
WINE=/usr/lib/wine/wine64
# The Linux build's target dir (shared: build scripts and proc macros are reused).
TARGET_DIR=$(realpath -m "${CARGO_TARGET_DIR:-target}")

# Debian's MinGW (the linker, and the C compiler of aws-lc-sys) and Wine 8.0. `wine64` puts
# nothing on PATH: its loader is $WINE.
if ! command -v x86_64-w64-mingw32-gcc >/dev/null || [ ! -x "$WINE" ]; then
  if ! command -v apt-get >/dev/null; then
    echo "windows-tests: FAILED: need x86_64-w64-mingw32-gcc and $WINE (Debian: gcc-mingw-w64-x86-64 wine64)" >&2
    exit 1
  fi
  apt-get update -qq && apt-get install -y -qq --no-install-recommends gcc-mingw-w64-x86-64 wine64 >/dev/null
fi
# No silent skip: without the Windows target nothing here is proven, so the run fails.
if ! rustup target list --installed | grep -qx "$TARGET" && ! rustup target add "$TARGET"; then
  echo "windows-tests: FAILED: cannot install the Rust target $TARGET; the Windows build is NOT tested" >&2
  exit 1
fi
# The wasm32-wasip2 example components the suite installs (up to date: a second or two).
bash example-plugins/build.sh >/dev/null

export CARGO_INCREMENTAL=0
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=$WINE
# No debug info: test executables of ~90 MB instead of ~460 MB, and faster links.
export CARGO_PROFILE_DEV_DEBUG=0

# Wine: its own prefix inside target/, no display, no Mono/Gecko install prompts, no debug chatter.
export WINEPREFIX="$TARGET_DIR/wine-prefix"
export WINEDEBUG=-all
export WINEDLLOVERRIDES="mscoree,mshtml="
unset DISPLAY WAYLAND_DISPLAY
if [ ! -f "$WINEPREFIX/system.reg" ]; then
  mkdir -p "$WINEPREFIX"
  "$WINE" wineboot --init
  /usr/lib/wine/wineserver -w
fi
# Wine 8.0 lacks bcryptprimitives.dll, which every Rust >= 1.78 .exe imports; the shim stands in.
SYS32="$WINEPREFIX/drive_c/windows/system32"
if [ ! -f "$SYS32/bcryptprimitives.dll" ] || [ tests/windows/bcryptprimitives.c -nt "$SYS32/bcryptprimitives.dll" ]; then
  x86_64-w64-mingw32-gcc -O2 -s -shared -o "$SYS32/bcryptprimitives.dll" \
    tests/windows/bcryptprimitives.c tests/windows/bcryptprimitives.def -lbcrypt
fi

# The MCP test server, as a Windows executable, for the suite's mcp.json.
cargo build -q -p cst-mcp-test-server --target "$TARGET"
export CST_MCP_TEST_SERVER="$TARGET_DIR/$TARGET/debug/cst-mcp-test-server.exe"
export CST_EXAMPLE_PLUGINS="$PWD/example-plugins"
cargo test -q -p cst-agent --target "$TARGET" --test windows_wine --no-run
built=$(date +%s)
echo "windows-tests: built in $((built - start)) s"
# A Windows process that never ends must fail the run, not hang it.
timeout 600 cargo test -q -p cst-agent --target "$TARGET" --test windows_wine -- --test-threads=2
# Every Windows process of the suite must be gone by now; a leftover one would keep Wine up.
timeout 30 /usr/lib/wine/wineserver -w || { echo "windows-tests: Wine processes left over" >&2; /usr/lib/wine/wineserver -k; exit 1; }

echo "windows-tests: passed in $(($(date +%s) - start)) s (tests under Wine: $(($(date +%s) - built)) s)"
