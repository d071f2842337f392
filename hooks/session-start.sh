#!/bin/sh
# SessionStart launcher of the System-1 plugin (POSIX sh; runs once per session).
# 1. Links this plugin's data folder to the gateway's venv, so the per-prompt hooks can run
#    "${CLAUDE_PLUGIN_DATA}/venv/bin/python" in exec form (no shell on the hot path).
# 2. Says so when the gateway is not installed; else runs the SessionStart hook.
# A relative SYSTEM1_INSTALL_DIR is ignored: it would resolve in the working directory, the
# repository, whose own venv/bin/python would then run (and be linked for the guard).
case "${SYSTEM1_INSTALL_DIR:-}" in /*) ;; *) SYSTEM1_INSTALL_DIR= ;; esac
venv="${SYSTEM1_INSTALL_DIR:-$HOME/.system1-gateway}/venv"
if [ -x "$venv/Scripts/python.exe" ]; then  # Windows (Git Bash): install.ps1 made the junctions
  exec "$venv/Scripts/python.exe" -I -m system1_gateway.hooks.session_start "$@"
fi
if [ ! -x "$venv/bin/python" ]; then
  echo '{"systemMessage":"System-1: the gateway is not installed, so its hooks are idle: run /system1:setup (or install.sh from the repository)."}'
  exit 0
fi
data="${CLAUDE_PLUGIN_DATA:-}"
if [ -n "$data" ] && [ "$(readlink "$data/venv" 2>/dev/null)" != "$venv" ]; then
  mkdir -p "$data" && rm -f "$data/venv" 2>/dev/null
  ln -s "$venv" "$data/venv" 2>/dev/null
fi
exec "$venv/bin/python" -I -m system1_gateway.hooks.session_start "$@"
