#!/bin/sh
# PermissionRequest on Bash: [guard] approve (hooks/hooks.json). Claude Code starts it with sh
# when its permission dialog for a Bash command is about to show; it runs under bash (for
# /dev/tcp) and hands the hook input to the plugin's hook server over the guard's loopback
# channel (src/system1_gateway/hooks/channel.py), as hooks/guard.sh does, marked "approve".
# What it prints is one fixed line it builds itself, the allow below, and only for the one
# answer "<answer key> allow", or, when no authenticated answer comes (no bash, no server, a
# dead, hung or impostor server, a wrong key, a server that is not Claude Code's own child),
# for the exact allow of the command path it runs itself (`python -I -m
# system1_gateway.hooks.approve`, the same rules, reading the input it kept), as guard.sh runs
# the command guard. Anything else prints nothing: Claude Code shows its prompt.
data="${CLAUDE_PLUGIN_DATA:-}"
python="$data/venv/bin/python"
if [ -x "$data/venv/Scripts/python.exe" ]; then  # Windows (Git Bash)
  python="$data/venv/Scripts/python.exe"
fi
allow='{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}'
if [ -z "${BASH_VERSION:-}" ]; then  # -p: no $BASH_ENV, no functions from the environment
  if command -v bash >/dev/null 2>&1; then exec bash -p "$0" "$@"; fi
  [ -n "$data" ] && [ -x "$python" ] || exit 0  # no bash: the command path reads stdin itself
  out=$("$python" -I -m system1_gateway.hooks.approve 2>/dev/null) || out=
  [ "$out" = "$allow" ] && printf '%s\n' "$allow"
  exit 0
fi
export LC_ALL=C  # bytes: ${#input} is what goes on the wire, and patterns match bytes
wait=5  # the server answers by its own deadline (4.7 s); past this it is taken as hung
IFS= read -r -d '' input  # the whole hook input (JSON: no NUL); kept for the command path
[ -n "$data" ] || exit 0
command_path() {  # no authenticated answer: the same rules, in a process this script starts
  [ -x "$python" ] || exit 0
  out=$(printf '%s' "$input" | "$python" -I -m system1_gateway.hooks.approve 2>/dev/null) || out=
  [ "$out" = "$allow" ] && printf '%s\n' "$allow"
  exit 0
}
[ -f "$data/hook-servers/$PPID" ] || command_path
server= port= ask= key= rest=
read -r server port ask key rest < "$data/hook-servers/$PPID" || :
case "$server:$port:$ask:$key" in
  *[!0-9a-f:]* | :* | *::* | *:) command_path ;;  # not a line the server wrote
esac
kill -0 "$server" 2>/dev/null || command_path  # alive and ours (another user's pid: EPERM)
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
[ -n "$parent" ] && [ "$parent" = "$PPID" ] || command_path
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
case "$answer" in
  "$key allow ") printf '%s\n' "$allow" ;;
  "$key none ") ;;  # the server's answer: no approval
  *) command_path ;;  # no authenticated answer (hung, gone, an impostor, a wrong key)
esac
exit 0
