# Start a local Laya server (upstream `laya[serve]`) for the gateway's `laya` provider.
# Binds 127.0.0.1, preloads typed-decisions, uses CUDA when present (else CPU), logs next to
# this script, and does nothing if the port is taken.
$ErrorActionPreference = "Stop"
$here = Split-Path -Parent $MyInvocation.MyCommand.Path
$port = if ($env:LAYA_PORT) { [int]$env:LAYA_PORT } else { 8000 }
$bin = if ($env:LAYA_BIN) { $env:LAYA_BIN } else { "laya-serve" }
$log = Join-Path $here "laya-serve.log"

$client = New-Object System.Net.Sockets.TcpClient
try { $client.Connect("127.0.0.1", $port); $inUse = $true } catch { $inUse = $false } finally { $client.Dispose() }
if ($inUse) { Write-Output "laya: port $port is already in use on 127.0.0.1; not starting another server"; exit 0 }
if (-not (Get-Command $bin -ErrorAction SilentlyContinue)) {
  Write-Error "laya: '$bin' not found; install it with: pip install 'laya[serve]'"; exit 1
}
$device = "cpu"
if (Get-Command nvidia-smi -ErrorAction SilentlyContinue) { $device = "cuda" }
$env:LAYA_HOST = "127.0.0.1"; $env:LAYA_PORT = "$port"; $env:LAYA_PRELOAD = "1"; $env:LAYA_DEVICE = $device
if (-not $env:LAYA_MODELS) { $env:LAYA_MODELS = "typed-decisions" }
Write-Output "laya: starting on 127.0.0.1:$port (device $device), log: $log"
Start-Process -FilePath $bin -RedirectStandardOutput $log -RedirectStandardError "$log.err" -WindowStyle Hidden
