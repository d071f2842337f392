#!/usr/bin/env bash
# The real components the suite drives (MCP clients, Claude Code, Pi, Node 22, the conformance
# suites, laya-serve, the Jev clients, systemd-analyze, Chromium, redis-server), installed into
# $SYSTEM1_TOOLS_DIR (default .tools) and, for the Debian packages, by apt-get (root).
# Without them their tests skip locally; CI (`.ci/run`) runs this and requires every one
# (SYSTEM1_REQUIRE_CLIENTS=1). `make clients` runs it. Each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."
export SYSTEM1_TOOLS_DIR="${SYSTEM1_TOOLS_DIR:-$PWD/.tools}"
apt_install() {
  if [ "$(id -u)" != 0 ]; then
    echo "needs root to install Debian packages: sudo apt-get install -y $*" >&2
    return 1
  fi
  apt-get update -qq && apt-get install -y -qq "$@" >/dev/null
}

# Real third-party MCP clients for tests/test_mcp_clients.py, in a cached tools folder.
if ! command -v npm >/dev/null; then
  apt_install nodejs npm
fi
[ -x "$SYSTEM1_TOOLS_DIR/inspector/node_modules/.bin/mcp-inspector" ] ||
  npm install --silent --no-fund --no-audit --prefix "$SYSTEM1_TOOLS_DIR/inspector" @modelcontextprotocol/inspector@2.12.0
[ -x "$SYSTEM1_TOOLS_DIR/cc/node_modules/.bin/claude" ] ||
  npm install --silent --no-fund --no-audit --prefix "$SYSTEM1_TOOLS_DIR/cc" @anthropic-ai/claude-code@2.1.332
# Node 22 from npm (the conformance suite needs Node >= 22; Debian's may be older), the
# official MCP conformance suite with a stdio->HTTP bridge, and the TypeScript SDK with Ajv:
# tests/test_mcp_conformance.py and tests/test_mcp_ts_client.py.
[ -x "$SYSTEM1_TOOLS_DIR/node22/node_modules/.bin/node" ] ||
  npm install --silent --no-fund --no-audit --prefix "$SYSTEM1_TOOLS_DIR/node22" node@22.23.3
[ -f "$SYSTEM1_TOOLS_DIR/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js" ] &&
  [ -f "$SYSTEM1_TOOLS_DIR/conformance/node_modules/supergateway/dist/index.js" ] ||
  npm install --silent --no-fund --no-audit --prefix "$SYSTEM1_TOOLS_DIR/conformance" @modelcontextprotocol/conformance@0.1.16 supergateway@4.0.0
[ -f "$SYSTEM1_TOOLS_DIR/tsclient/node_modules/@modelcontextprotocol/sdk/package.json" ] &&
  [ -f "$SYSTEM1_TOOLS_DIR/tsclient/node_modules/ajv/dist/2020.js" ] ||
  npm install --silent --no-fund --no-audit --prefix "$SYSTEM1_TOOLS_DIR/tsclient" @modelcontextprotocol/sdk@1.32.2 ajv@8.20.0
# The 2026-07-28 era: conformance 0.2.0-alpha.12 against `system1 serve`'s /mcp
# (tests/test_mcp_conformance_2026.py) and the v2 TypeScript client of both faces
# (tests/test_mcp_ts_client_v2.py), each in its own prefix beside the 2025-11-25 ones.
[ -f "$SYSTEM1_TOOLS_DIR/conformance02/node_modules/@modelcontextprotocol/conformance/dist/index.js" ] ||
  npm install --silent --no-fund --no-audit --prefix "$SYSTEM1_TOOLS_DIR/conformance02" @modelcontextprotocol/conformance@0.2.0-alpha.12
[ -f "$SYSTEM1_TOOLS_DIR/tsclient2/node_modules/@modelcontextprotocol/client/package.json" ] &&
  [ -f "$SYSTEM1_TOOLS_DIR/tsclient2/node_modules/ajv/dist/2020.js" ] ||
  npm install --silent --no-fund --no-audit --prefix "$SYSTEM1_TOOLS_DIR/tsclient2" @modelcontextprotocol/client@2.4.0 ajv@8.20.0

# The Pi coding agent, 0.73.1 and 1.6.0 (tests/test_pi*.py drive them headlessly; 1.6.0 runs on the
# Node 22 above) and TypeScript with Node's types
# (the extension is type-checked against Pi's installed types).
[ -x "$SYSTEM1_TOOLS_DIR/pi/node_modules/.bin/pi" ] ||
  npm install --silent --no-fund --no-audit --prefix "$SYSTEM1_TOOLS_DIR/pi" @mariozechner/pi-coding-agent@0.73.1
[ -x "$SYSTEM1_TOOLS_DIR/pi16/node_modules/.bin/pi" ] ||
  npm install --silent --no-fund --no-audit --prefix "$SYSTEM1_TOOLS_DIR/pi16" @earendil-works/pi-coding-agent@1.6.0
[ -x "$SYSTEM1_TOOLS_DIR/tsc/node_modules/.bin/tsc" ] && [ -d "$SYSTEM1_TOOLS_DIR/tsc/node_modules/@types/node" ] ||
  npm install --silent --no-fund --no-audit --prefix "$SYSTEM1_TOOLS_DIR/tsc" typescript@5.9.3 @types/node@24

# The real laya-serve package for tests/test_laya.py, in its own venv (its console script
# collides with upstream laya[serve], and it should not share the gateway's dependencies).
[ -x "$SYSTEM1_TOOLS_DIR/laya/bin/laya-serve" ] || {
  python3 -m venv "$SYSTEM1_TOOLS_DIR/laya" && "$SYSTEM1_TOOLS_DIR/laya/bin/pip" install -q "laya-serve==0.2.1"
}

# The real Jev clients for tests/test_jev_clients.py, in their own venv (their httpx2/pydantic
# pins stay out of the gateway's; the SDK's [zstd] extra gives it a compressor before 3.14).
"$SYSTEM1_TOOLS_DIR/jevclients/bin/python" -c "import jev_lite, zstandard; from typesafe_sdk._core.compression import COMPRESSORS; assert 'zstd' in COMPRESSORS" 2>/dev/null || {
  python3 -m venv "$SYSTEM1_TOOLS_DIR/jevclients" &&
    "$SYSTEM1_TOOLS_DIR/jevclients/bin/pip" install -q "typesafe-sdk[zstd]==0.7.5" "jev-lite==0.0.6" "zstandard>=0.22,<1"
}

# systemd-analyze for tests/test_login_units.py (verifies the systemd --user unit), and headless
# Chromium for tests/test_report.py (the report's HTML page is rendered and screenshotted)
command -v systemd-analyze >/dev/null && command -v chromium >/dev/null ||
  apt_install systemd chromium

# A real redis-server for the shared-state tests (tests/test_state*.py start their own on a
# free loopback port; the packaged service, if it starts, is not used).
command -v redis-server >/dev/null ||
  apt_install redis-server

# make, for tests/test_makefile.py (the contributor's loop is a Makefile)
command -v make >/dev/null || apt_install make
