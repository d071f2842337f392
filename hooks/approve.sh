#!/bin/sh
# PermissionRequest on Bash: [guard] approve (hooks/hooks.json). Claude Code starts it with sh
# when its permission dialog for a Bash command is about to show; it runs under bash (for
# /dev/tcp) and hands the hook input to the plugin's hook server over the guard's loopback
# channel (src/system1_gateway/hooks/channel.py), as hooks/guard.sh does, marked "approve".
# What it prints is one fixed line it builds itself, the allow below, and only for the one
# answer "<answer key> allow"; anything else, and every failure (no bash, no server, a dead,
# hung or impostor server, a wrong key, a server that is not Claude Code's own child), prints
# nothing: Claude Code shows its prompt. Failing means no approval; there is no fallback.
data="${CLAUDE_PLUGIN_DATA:-}"
if [ -z "${BASH_VERSION:-}" ]; then  # -p: no $BASH_ENV, no functions from the environment
  if command -v bash >/dev/null 2>&1; then exec bash -p "$0" "$@"; fi
  exit 0
fi
export LC_ALL=C  # bytes: ${#input} is what goes on the wire, and patterns match bytes
wait=5  # the server answers by its own deadline (4.7 s); past this it is taken as hung
IFS= read -r -d '' input
[ -n "$data" ] && [ -f "$data/hook-servers/$PPID" ] || exit 0
server= port= ask= key= rest=
read -r server port ask key rest < "$data/hook-servers/$PPID" || :
case "$server:$port:$ask:$key" in
  *[!0-9a-f:]* | :* | *::* | *:) exit 0 ;;  # not a line the server wrote
esac
kill -0 "$server" 2>/dev/null || exit 0  # alive and ours (another user's pid: EPERM)
# The server is Claude Code's own child, as this script is (plugin.json starts it): a process
# that killed it and answers in its place from anywhere else is not asked. Linux: its stat line
# (the parent is the 2nd field after the command name, which may hold spaces and parentheses);
# elsewhere ps.
parent=
if [ -r "/proc/$server/stat" ]; then
  IFS= read -r stat < "/proc/$server/stat" || stat=
  set -f
  set -- ${stat##*) }
  set +f
  parent="${2:-}"
else
  parent=$(ps -o ppid= -p "$server" 2>/dev/null) || parent=
  parent="${parent//[!0-9]/}"
fi
[ -n "$parent" ] && [ "$parent" = "$PPID" ] || exit 0
exec 5< <(
  exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 0
  printf '%s %s approve\n%s' "$ask" "${#input}" "$input" >&3 || exit 0
  IFS= read -r line <&3 && printf '%s\n' "$line"
) 2>/dev/null
child=$!
answer=
IFS= read -r -t "$wait" answer <&5 || answer=
exec 5<&-
kill "$child" 2>/dev/null
if [ "$answer" = "$key allow " ]; then
  printf '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}\n'
fi
exit 0
