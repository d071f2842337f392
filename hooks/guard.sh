#!/bin/sh
# PreToolUse on Bash: the guard (POSIX sh; no Python while the plugin's hook server runs).
# Claude Code starts this script and the hook server alike (hooks.json; plugin.json
# mcpServers.hooks), so $PPID is the same process. While it runs, the server names itself in
# <plugin data>/hook-servers/<$PPID> and answers through named pipes in hook-servers/<its
# pid>.d (src/system1_gateway/hooks/channel.py has the protocol): this script claims a slot,
# hands over the hook input, and prints the one-line answer. Without an answer (the gateway
# not installed, the server crashed, not connected, every slot busy, nothing within $wait s)
# it runs the command guard on the same input, so [guard] on_failure still holds.
data="${CLAUDE_PLUGIN_DATA:-}"
wait=6     # the server answers by its own deadline (4.7 s); past this it is taken as hung
handed=    # set once stdin has been copied into a slot: the copy is open on fd 4
lost=      # set when stdin was read but could not be copied: the input is gone
if [ -n "$data" ] && [ -f "$data/hook-servers/$PPID" ]; then
  server=
  read -r server < "$data/hook-servers/$PPID" || :
  case "$server" in
    '' | *[!0-9]*) ;;
    *) pipes="$data/hook-servers/$server.d"
       if kill -0 "$server" 2>/dev/null && [ -p "$pipes/calls" ]; then
         umask 077
         slot=
         set -C  # a slot is claimed by creating its lock: an exclusive create, one caller each
         for n in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
           if { printf '%s\n' "$$" > "$pipes/lock$n"; } 2>/dev/null; then slot=$n; break; fi
         done
         set +C
         # The answer pipe is held before the call, so the answer never waits for a reader.
         # (`command exec`: a pipe that is gone is a failed open here, not the end of the script.)
         if [ -n "$slot" ] && { command exec 3<>"$pipes/r$slot"; } 2>/dev/null; then
           input="$pipes/p$slot"
           if { while IFS= read -r line || [ -n "$line" ]; do printf '%s\n' "$line"; done > "$input"; } 2>/dev/null \
              && { command exec 4<"$input"; } 2>/dev/null
           then
             handed=1  # fd 4 keeps the copy readable even if the server removes its folder
             printf '%s %s\n' "$slot" "$$" 1<>"$pipes/calls"
             (trap 'kill "$nap" 2>/dev/null; exit 0' TERM  # started while the server works
              sleep "$wait" 3>&- & nap=$!
              wait "$nap"; printf '\n' >&3) >/dev/null 2>&1 </dev/null &
             watchdog=$!
             while IFS= read -r answer <&3; do
               case "$answer" in
                 "$$ "*) kill "$watchdog" 2>/dev/null; printf '%s\n' "${answer#* }"; exit 0 ;;
                 '') break ;;  # the watchdog's empty line: no answer in time
               esac  # otherwise an answer to an earlier caller of this slot that gave up: not ours
             done
             kill "$watchdog" 2>/dev/null
           else
             lost=1  # the copy failed, and stdin may be partly read: only the failure policy is left
           fi
           exec 3>&-
         fi
       fi ;;
  esac
fi
python="$data/venv/bin/python"
if [ -x "$data/venv/Scripts/python.exe" ]; then  # Windows (Git Bash)
  python="$data/venv/Scripts/python.exe"
fi
if [ -n "$handed" ]; then
  exec "$python" -I -m system1_gateway.hooks.guard "$@" <&4
fi
if [ -n "$lost" ]; then
  exec "$python" -I -m system1_gateway.hooks.guard --input-lost "$@" < /dev/null
fi
exec "$python" -I -m system1_gateway.hooks.guard "$@"
