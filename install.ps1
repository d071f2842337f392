# Install (or upgrade) the System-1 Gateway for this user, from this clone (Windows PowerShell 5.1 or PowerShell 7).
#
#   .\install.ps1 [-NoLocal] [-NoPrepare]
#
# Creates $env:SYSTEM1_INSTALL_DIR\venv (default ~\.system1-gateway\venv) with a Python >= 3.11
# ($env:SYSTEM1_PYTHON names one explicitly; the Microsoft Store "python" stub is skipped),
# installs this package into it as a copy with the `local` extra (-NoLocal: fast tier only),
# creates the user config from config.example.toml when there is none, prepares the model
# once, and prints the command that registers the MCP server in Claude Code.
[CmdletBinding()]
param(
    [switch]$NoLocal,
    [switch]$NoPrepare
)
$ErrorActionPreference = 'Stop'

function Say([string]$Message) { [Console]::Error.WriteLine("system1 install: $Message") }

function Test-Python([string]$Path) {
    # The Store stub lives under WindowsApps and opens the Store instead of running Python.
    if (-not $Path -or $Path -like '*\WindowsApps\*') { return $false }
    try {
        & $Path -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>$null
        return ($LASTEXITCODE -eq 0)
    } catch { return $false }
}

$here = Split-Path -Parent $MyInvocation.MyCommand.Path
$homeDir = if ($env:SYSTEM1_INSTALL_DIR) { $env:SYSTEM1_INSTALL_DIR } else { Join-Path $HOME '.system1-gateway' }
$venv = Join-Path $homeDir 'venv'
$venvPython = Join-Path $venv 'Scripts\python.exe'

$python = $null
$candidates = @()
if ($env:SYSTEM1_PYTHON) { $candidates += $env:SYSTEM1_PYTHON }
foreach ($version in '3.14', '3.13', '3.12', '3.11') {
    $launcher = Get-Command py -ErrorAction SilentlyContinue
    if ($launcher) {
        $found = & $launcher.Source "-$version" -c 'import sys; print(sys.executable)' 2>$null
        if ($LASTEXITCODE -eq 0 -and $found) { $candidates += $found.Trim() }
    }
}
foreach ($name in 'python3', 'python') {
    Get-Command $name -All -ErrorAction SilentlyContinue | ForEach-Object { $candidates += $_.Source }
}
foreach ($candidate in $candidates) {
    if (Test-Python $candidate) { $python = $candidate; break }
}
if (-not $python) {
    Say 'no Python 3.11 or newer found (the Microsoft Store stub does not count); install one from python.org, or set SYSTEM1_PYTHON'
    exit 1
}
Say "Python: $python"

New-Item -ItemType Directory -Force -Path $homeDir | Out-Null
if (-not (Test-Path $venvPython)) {
    Say "creating $venv"
    & $python -m venv $venv
    if ($LASTEXITCODE -ne 0) { exit 1 }
}
$target = if ($NoLocal) { $here } else { "$here[local]" }
Say "installing system1-gateway into $venv (a copy of $here)"
& $venvPython -m pip install --quiet --upgrade $target
if ($LASTEXITCODE -ne 0) { exit 1 }

$config = (& $venvPython -I -c 'from system1_gateway.paths import config_path; print(config_path())').Trim()
if (-not (Test-Path $config)) {
    New-Item -ItemType Directory -Force -Path (Split-Path -Parent $config) | Out-Null
    Copy-Item (Join-Path $here 'config.example.toml') $config
    Say "created $config"
} else {
    Say "kept $config"
}

if (-not $NoPrepare) {
    Say 'preparing the model (once)'
    & $venvPython -I -c 'from system1_gateway.providers.embedded import assets; print(assets.gguf_path() if assets.llm_available() else "fast tier only"); print(assets.minilm_onnx_path())'
}

if (Get-Command pi -ErrorAction SilentlyContinue) {
    & (Join-Path $venv 'Scripts\system1.exe') install-pi --apply | Out-Null
    if ($LASTEXITCODE -eq 0) { Say 'installed the Pi extension (system1 install-pi)' }
}

# The plugin's per-prompt hooks run "${CLAUDE_PLUGIN_DATA}/venv/bin/python" (exec form, no shell).
# On Windows that path is made of junctions into this venv: bin -> Scripts, Lib -> Lib, plus
# a copy of pyvenv.cfg, so the venv's python.exe finds its environment through it.
$claudeDir = if ($env:CLAUDE_CONFIG_DIR) { $env:CLAUDE_CONFIG_DIR } else { Join-Path $HOME '.claude' }
$pluginVenv = Join-Path $claudeDir 'plugins\data\system1-system1-gateway\venv'
New-Item -ItemType Directory -Force -Path $pluginVenv | Out-Null
foreach ($pair in @(@('bin', 'Scripts'), @('Lib', 'Lib'))) {
    $link = Join-Path $pluginVenv $pair[0]
    if (Test-Path $link) { (Get-Item $link).Delete() }
    New-Item -ItemType Junction -Path $link -Target (Join-Path $venv $pair[1]) | Out-Null
}
Copy-Item (Join-Path $venv 'pyvenv.cfg') (Join-Path $pluginVenv 'pyvenv.cfg') -Force
Say "linked the plugin's hooks to this venv ($pluginVenv)"

# PowerShell eats a bare -- : the separator must be quoted.
Write-Output 'Register the MCP server in Claude Code (user scope):'
Write-Output "  claude mcp add --scope user --transport stdio system1 '--' `"$venvPython`" -I -m system1_gateway"
Write-Output "Check it: & `"$(Join-Path $venv 'Scripts\system1.exe')`" smoke"
Write-Output 'Plugin (hooks and skills), in Claude Code:'
Write-Output "  /plugin marketplace add $here"
Write-Output '  /plugin install system1@system1-gateway'
