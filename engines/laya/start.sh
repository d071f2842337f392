#!/usr/bin/env bash
# Start a local Laya server (upstream `laya[serve]`) for the gateway's `laya` provider.
# Binds 127.0.0.1, preloads the typed-decisions checkpoint, uses CUDA or Apple MPS when
# present (else CPU), logs next to this script, and does nothing if the port is taken.
#   LAYA_PORT (8000), LAYA_MODELS (typed-decisions), LAYA_BIN (laya-serve on PATH)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
port="${LAYA_PORT:-8000}"
bin="${LAYA_BIN:-laya-serve}"
log="$here/laya-serve.log"

if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "laya: port $port is already in use on 127.0.0.1; not starting another server"
  exit 0
fi
if ! command -v "$bin" >/dev/null 2>&1; then
  echo "laya: '$bin' not found; install it with: pip install 'laya[serve]'" >&2
  exit 1
fi
device=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  device=cuda
elif [ "$(uname -s)" = Darwin ] && [ "$(uname -m)" = arm64 ]; then
  device=mps
fi
echo "laya: starting on 127.0.0.1:$port (device $device), log: $log"
LAYA_HOST=127.0.0.1 LAYA_PORT="$port" LAYA_MODELS="${LAYA_MODELS:-typed-decisions}" LAYA_PRELOAD=1 \
  LAYA_DEVICE="$device" nohup "$bin" >>"$log" 2>&1 &
echo "laya: pid $!"
