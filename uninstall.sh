#!/bin/sh
# Uninstall the System-1 Gateway for this user.
#
#   ./uninstall.sh [--purge]
#
# Unregisters the MCP server from Claude Code (when `claude` is on PATH), stops the daemon,
# removes its start-at-login entry and deletes the venv. Your config, engines, heads,
# calibration and logs stay unless --purge, which deletes them too.
set -eu

home_dir="${SYSTEM1_INSTALL_DIR:-$HOME/.system1-gateway}"
venv="$home_dir/venv"
purge=0
for arg in "$@"; do
  case "$arg" in
    --purge) purge=1 ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "uninstall.sh: unknown option $arg (expected --purge)" >&2; exit 2 ;;
  esac
done

say() { printf 'system1 uninstall: %s\n' "$*" >&2; }

if command -v claude >/dev/null 2>&1; then
  if claude mcp remove system1 -s user >/dev/null 2>&1; then
    say "unregistered the MCP server (claude mcp remove system1 -s user)"
  else
    say "no user-scope MCP server named system1 in Claude Code"
  fi
fi

config=""
if [ -x "$venv/bin/system1" ]; then
  "$venv/bin/system1" daemon stop >/dev/null 2>&1 || true
  "$venv/bin/system1" daemon uninstall-login --apply >/dev/null 2>&1 || true
  say "stopped the daemon and removed its start-at-login entry"
  config=$("$venv/bin/python" -I -c 'from system1_gateway.paths import config_path; print(config_path())' 2>/dev/null || true)
fi

pi_extension="${PI_CODING_AGENT_DIR:-$HOME/.pi/agent}/extensions/system1"
if [ -f "$pi_extension/index.ts" ]; then
  rm -rf "$pi_extension"
  say "removed the Pi extension ($pi_extension)"
fi

if [ -d "$venv" ]; then
  rm -rf "$venv"
  say "deleted $venv"
else
  say "no venv at $venv"
fi

if [ "$purge" = 1 ]; then
  rm -rf "$home_dir"
  say "purged $home_dir (engines, heads, calibration, logs, state)"
  config="${config:-${SYSTEM1_CONFIG:-${XDG_CONFIG_HOME:-$HOME/.config}/system1/config.toml}}"
  if [ -e "$config" ]; then
    rm -f "$config" "$(dirname "$config")/routing_rule.py"
    rmdir "$(dirname "$config")" 2>/dev/null || true
    say "deleted $config"
  fi
else
  say "kept your config, engines, heads and logs ($home_dir; --purge deletes them)"
fi
