#!/bin/sh
# PreToolUse on Bash (POSIX sh), beside the guard's `mcp_tool` call (hooks.json): the guard's
# failure policy when the plugin's hook server is not there to answer that call.
# While it runs, the hook server names itself in <plugin data>/hook-servers/<Claude Code's
# pid> (hooks/serve.py `announce`); Claude Code starts this script and that server alike, so
# $PPID is the same process. Server alive: it answers the guard, and this exits at once (no
# Python: a few milliseconds, in parallel with the call). Otherwise (the gateway not
# installed, the server crashed or never connected) the command guard runs here, so a Bash
# call is still judged, and asked about when the engine cannot answer ([guard] on_failure).
data="${CLAUDE_PLUGIN_DATA:-}"
named="$data/hook-servers/$PPID"
if [ -n "$data" ] && [ -f "$named" ]; then
  server=
  read -r server < "$named" || :
  case "$server" in
    '' | *[!0-9]*) ;;
    *) if kill -0 "$server" 2>/dev/null; then exit 0; fi ;;
  esac
fi
if [ -x "$data/venv/Scripts/python.exe" ]; then  # Windows (Git Bash)
  exec "$data/venv/Scripts/python.exe" -I -m system1_gateway.hooks.guard "$@"
fi
exec "$data/venv/bin/python" -I -m system1_gateway.hooks.guard "$@"
