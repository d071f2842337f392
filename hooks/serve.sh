#!/bin/sh
# The plugin's hook server (plugin.json `mcpServers.hooks`, POSIX sh): Claude Code keeps it
# connected and calls its tools from hooks.json (`mcp_tool`), so the route and agent hooks
# start no process per prompt or spawn. Finds the gateway's venv as session-start.sh does;
# when the gateway is not installed it exits, the server does not connect, and those hooks
# are skipped (they fail open).
# A relative SYSTEM1_INSTALL_DIR is ignored: it would resolve in the working directory, the
# repository, whose own venv/bin/python would then run (and be linked for the guard).
case "${SYSTEM1_INSTALL_DIR:-}" in /*) ;; *) SYSTEM1_INSTALL_DIR= ;; esac
venv="${SYSTEM1_INSTALL_DIR:-$HOME/.system1-gateway}/venv"
if [ -x "$venv/Scripts/python.exe" ]; then  # Windows (Git Bash)
  exec "$venv/Scripts/python.exe" -I -m system1_gateway.hooks.serve "$@"
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "System-1: the gateway is not installed ($venv): its hook server is idle; run /system1:setup" >&2
  exit 1
fi
exec "$venv/bin/python" -I -m system1_gateway.hooks.serve "$@"
