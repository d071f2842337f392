# Uninstall the System-1 Gateway for this user (Windows PowerShell 5.1 or PowerShell 7).
#
#   .\uninstall.ps1 [-Purge]
#
# Unregisters the MCP server from Claude Code (when `claude` is on PATH), stops the daemon,
# removes its start-at-login entry and deletes the venv. Config, engines, heads, calibration
# and logs stay unless -Purge.
[CmdletBinding()]
param([switch]$Purge)
$ErrorActionPreference = 'Stop'

function Say([string]$Message) { [Console]::Error.WriteLine("system1 uninstall: $Message") }

$homeDir = if ($env:SYSTEM1_INSTALL_DIR) { $env:SYSTEM1_INSTALL_DIR } else { Join-Path $HOME '.system1-gateway' }
$venv = Join-Path $homeDir 'venv'
$venvPython = Join-Path $venv 'Scripts\python.exe'
$system1 = Join-Path $venv 'Scripts\system1.exe'

if (Get-Command claude -ErrorAction SilentlyContinue) {
    & claude mcp remove system1 -s user 2>$null | Out-Null
    if ($LASTEXITCODE -eq 0) { Say 'unregistered the MCP server' } else { Say 'no user-scope MCP server named system1' }
}

$config = $null
if (Test-Path $system1) {
    & $system1 daemon stop 2>$null | Out-Null
    & $system1 daemon uninstall-login --apply 2>$null | Out-Null
    Say 'stopped the daemon and removed its start-at-login entry'
    $config = (& $venvPython -I -c 'from system1_gateway.paths import config_path; print(config_path())' 2>$null)
}

$piDir = if ($env:PI_CODING_AGENT_DIR) { $env:PI_CODING_AGENT_DIR } else { Join-Path $HOME '.pi\agent' }
$piExtension = Join-Path $piDir 'extensions\system1'
if (Test-Path (Join-Path $piExtension 'index.ts')) {
    Remove-Item -Recurse -Force $piExtension
    Say "removed the Pi extension ($piExtension)"
}

if (Test-Path $venv) {
    Remove-Item -Recurse -Force $venv
    Say "deleted $venv"
} else {
    Say "no venv at $venv"
}

if ($Purge) {
    if (Test-Path $homeDir) { Remove-Item -Recurse -Force $homeDir }
    Say "purged $homeDir"
    if (-not $config) {
        $base = if ($env:APPDATA) { $env:APPDATA } else { Join-Path $HOME 'AppData\Roaming' }
        $config = if ($env:SYSTEM1_CONFIG) { $env:SYSTEM1_CONFIG } else { Join-Path $base 'system1\config.toml' }
    }
    $config = "$config".Trim()
    if ($config -and (Test-Path $config)) {
        $dir = Split-Path -Parent $config
        Remove-Item -Force $config
        $rule = Join-Path $dir 'routing_rule.py'
        if (Test-Path $rule) { Remove-Item -Force $rule }
        if (-not (Get-ChildItem $dir -Force)) { Remove-Item -Force $dir }
        Say "deleted $config"
    }
} else {
    Say "kept your config, engines, heads and logs ($homeDir; -Purge deletes them)"
}
