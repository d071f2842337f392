#!/bin/sh
# PreToolUse on Bash: the guard. Claude Code starts it (hooks.json) with sh; it runs under bash
# (for /dev/tcp) and starts no Python while the plugin's hook server runs. Claude Code starts
# this script and the hook server alike, so $PPID is the same process: the server names itself
# in <plugin data>/hook-servers/<$PPID> ("<pid> <port> <request key> <answer key>"), and this
# script hands it the hook input over a loopback connection of its own and reads one coded
# answer back (src/system1_gateway/hooks/channel.py has the protocol and why). What it prints
# it builds itself from a closed set (ask, deny, context, nothing), never an "allow" and never
# a line copied from the server: only the server's reason text goes in, checked to be a JSON
# string's inside that cannot end its string. Without an answer (the gateway not installed,
# no bash, the server gone, hung, or not the one named: a wrong key) it runs the command guard
# on the same input, so [guard] on_failure still holds.
data="${CLAUDE_PLUGIN_DATA:-}"
python="$data/venv/bin/python"
if [ -x "$data/venv/Scripts/python.exe" ]; then  # Windows (Git Bash)
  python="$data/venv/Scripts/python.exe"
fi
if [ -z "${BASH_VERSION:-}" ]; then  # -p: no $BASH_ENV, no functions from the environment
  if command -v bash >/dev/null 2>&1; then exec bash -p "$0" "$@"; fi
  exec "$python" -I -m system1_gateway.hooks.guard "$@"
fi
export LC_ALL=C  # bytes: ${#input} is what goes on the wire, and patterns match bytes
wait=6  # the server answers by its own deadline (4.7 s); past this it is taken as hung
IFS= read -r -d '' input  # the whole hook input (JSON: no NUL); kept for the command guard
server= port= ask= key= rest=
if [ -n "$data" ] && [ -f "$data/hook-servers/$PPID" ]; then
  read -r server port ask key rest < "$data/hook-servers/$PPID" || :
fi
answer=
case "$server:$port:$ask:$key" in
  *[!0-9a-f:]* | :* | *::* | *:) ;;  # not a line the server wrote
  *)
    if kill -0 "$server" 2>/dev/null; then  # alive and ours (another user's pid: EPERM)
      # The exchange runs in a child, so a connect or write that blocks (a flooded or stopped
      # server) costs $wait at most: `read -t` bounds it. The pipe from it is anonymous.
      exec 5< <(
        exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 0
        printf '%s %s\n%s' "$ask" "${#input}" "$input" >&3 || exit 0
        IFS= read -r line <&3 && printf '%s\n' "$line"
      ) 2>/dev/null
      child=$!
      IFS= read -r -t "$wait" answer <&5 || answer=
      exec 5<&-
      kill "$child" 2>/dev/null
    fi ;;
esac
case "$answer" in
  "$key "*)
    answer="${answer#"$key "}"
    code="${answer%% *}" text="${answer#* }"
    case "$text" in
      *'"'* | *[!\ -~]* | *'\' | *'\'[!u]*) code= ;;  # could end its string: not the server's
    esac
    case "$code" in
      none) printf '{}\n'; exit 0 ;;
      ask | deny)
        printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"%s","permissionDecisionReason":"%s"}}\n' \
          "$code" "$text"
        exit 0 ;;
      context)
        printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"%s"}}\n' "$text"
        exit 0 ;;
    esac ;;
esac
printf '%s' "$input" | "$python" -I -m system1_gateway.hooks.guard "$@"
exit $?
