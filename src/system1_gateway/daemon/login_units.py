"""Start-at-login units for the per-user daemon (`system1 daemon install-login|uninstall-login`).

* Linux: a systemd `--user` service running `daemon run` with `Restart=on-failure`. A clean
  idle exit is code 0, which on-failure does not restart: an unused engine stays unloaded
  until the next login (or the next CLI/MCP call's autostart).
* macOS: a LaunchAgent with RunAtLoad and `KeepAlive = {SuccessfulExit: false}` (restart after
  a crash only, for the same reason).
* Windows: a `.cmd` in the Startup folder that runs `daemon start` minimized (the detached
  daemon outlives the console window, which closes once it is up). Windows has no restart on
  crash; the CLI/MCP autostart covers it.

The unit carries the interpreter that installed it (`-I`: isolated from PYTHON* variables and
the working directory) and the SYSTEM1_* variables of the installing shell, so the daemon's
fingerprint matches that shell's; secrets are never written into a unit (the Linux unit reads
an optional `~/.config/system1/daemon.env` for them).
"""

from __future__ import annotations

import os
import plistlib
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

SERVICE = "system1-gateway.service"
LABEL = "com.system1-gateway.daemon"
STARTUP_CMD = "system1-gateway.cmd"
# Variables that locate the user's files: copied so the daemon finds the same config and state.
LOCATION_VARS = ("SYSTEM1_CONFIG", "SYSTEM1_STATE_DIR", "XDG_CONFIG_HOME")
# Lifecycle variables of the installing shell that must not steer the daemon (a test's
# SYSTEM1_SERVE_AUTOSTART=0, a one-off port).
SKIPPED_VARS = frozenset({"SYSTEM1_SERVE_AUTOSTART", "SYSTEM1_SERVE_PORT", "SYSTEM1_SERVE_HOST",
                          "SYSTEM1_TOOLS_DIR", "SYSTEM1_REQUIRE_CLIENTS", "SYSTEM1_DAEMON_LOCK_FD"})
SECRET_WORDS = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|BEARER|CREDENTIAL", re.IGNORECASE)


@dataclass(frozen=True)
class Unit:
    platform: str  # linux | darwin | win32
    path: Path
    content: str
    enable: list[list[str]]  # commands that activate it now (empty: none needed)
    disable: list[list[str]]
    secrets_skipped: list[str] = field(default_factory=list)
    log_dir: Path | None = None  # created (0700) on install: launchd opens the log before the daemon runs


def daemon_argv(python: str | None = None) -> list[str]:
    return [python or sys.executable, "-I", "-m", "system1_gateway.cli", "daemon", "run"]


def unit_environment(environ: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """(variables written into the unit, names of secrets left out)."""
    chosen, secrets = {}, []
    for name in sorted(environ):
        if name in LOCATION_VARS or (name.startswith("SYSTEM1_") and name not in SKIPPED_VARS):
            if SECRET_WORDS.search(name):
                secrets.append(name)
            else:
                chosen[name] = environ[name]
    return chosen, secrets


def _home(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("HOME") or environ.get("USERPROFILE") or Path.home())


# --- Linux: systemd --user ------------------------------------------------------------------------

def _systemd_quote(word: str, command: bool = False) -> str:
    """One ExecStart/Environment word: specifiers (%) doubled, quotes and backslashes escaped,
    and in a command line `$` doubled (systemd expands $VAR there)."""
    escaped = word.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    if command:
        escaped = escaped.replace("$", "$$")
    return f'"{escaped}"' if re.search(r'[\s"\'\\;]', word) or not word else escaped


def systemd_unit(python: str, environ: Mapping[str, str]) -> Unit:
    config_home = Path(environ.get("XDG_CONFIG_HOME") or "")
    if not config_home.is_absolute():  # unset, or relative: ignored, as the XDG spec says (paths.config_path)
        config_home = _home(environ) / ".config"
    env, secrets = unit_environment(environ)
    lines = [
        "# Written by `system1 daemon install-login`; removed by `system1 daemon uninstall-login`.",
        "[Unit]",
        "Description=System-1 Gateway daemon (one warm decision engine per user)",
        "",
        "[Service]",
        "Type=exec",
        "ExecStart=" + " ".join(_systemd_quote(word, command=True) for word in daemon_argv(python)),
        # An idle exit is code 0 and must stay down; a crash comes back after 5 s.
        "Restart=on-failure",
        "RestartSec=5",
        # `daemon stop` and systemd both stop with SIGTERM: in-flight requests finish first.
        "KillSignal=SIGTERM",
        "TimeoutStopSec=15",
        *(f"Environment={_systemd_quote(f'{name}={value}')}" for name, value in env.items()),
        # Secrets (API keys) go here, not into the unit: NAME=value lines, optional file.
        "EnvironmentFile=-%h/.config/system1/daemon.env",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ]
    return Unit("linux", config_home / "systemd" / "user" / SERVICE, "\n".join(lines),
                enable=[["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", SERVICE]],
                disable=[["systemctl", "--user", "disable", "--now", SERVICE],
                         ["systemctl", "--user", "daemon-reload"]],
                secrets_skipped=secrets)


# --- macOS: LaunchAgent --------------------------------------------------------------------------

def launch_agent(python: str, environ: Mapping[str, str], uid: int | None = None) -> Unit:
    home = _home(environ)
    state = Path(environ.get("SYSTEM1_STATE_DIR") or home / ".system1-gateway").expanduser()
    log = state / "daemon" / "daemon.log"  # daemon_files.log_path() of the unit's environment
    env, secrets = unit_environment(environ)
    plist = {
        "Label": LABEL,
        "ProgramArguments": daemon_argv(python),
        "RunAtLoad": True,
        # Restart after a crash only: a clean idle exit (0) stays down.
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": 10,
        "ProcessType": "Background",
        "EnvironmentVariables": env,
        "StandardOutPath": str(log),
        "StandardErrorPath": str(log),
    }
    path = home / "Library" / "LaunchAgents" / f"{LABEL}.plist"
    if uid is None:
        uid = os.getuid() if hasattr(os, "getuid") else 0
    domain = f"gui/{uid}"
    return Unit("darwin", path, plistlib.dumps(plist).decode("utf-8"),
                enable=[["launchctl", "bootstrap", domain, str(path)]],
                disable=[["launchctl", "bootout", domain, str(path)]], secrets_skipped=secrets,
                log_dir=log.parent)


# --- Windows: Startup folder ---------------------------------------------------------------------

def _cmd_quote(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def startup_cmd(python: str, environ: Mapping[str, str]) -> Unit:
    appdata = Path(environ.get("APPDATA") or _home(environ) / "AppData" / "Roaming")
    env, secrets = unit_environment(environ)
    argv = [python, "-I", "-m", "system1_gateway.cli", "daemon", "start"]
    lines = [
        "@echo off",
        "rem Written by `system1 daemon install-login`; removed by `system1 daemon uninstall-login`.",
        "rem Starts the System-1 Gateway daemon at login (detached: it outlives this window).",
        *(f'set "{name}={value.replace("%", "%%")}"' for name, value in env.items()),
        'start "system1-gateway" /min ' + " ".join(_cmd_quote(word) for word in argv),
        "",
    ]
    path = appdata / "Microsoft" / "Windows" / "Start Menu" / "Programs" / "Startup" / STARTUP_CMD
    return Unit("win32", path, "\r\n".join(lines), enable=[], disable=[], secrets_skipped=secrets)


def unit_for(platform: str | None = None, python: str | None = None,
             environ: Mapping[str, str] | None = None) -> Unit:
    platform = platform or sys.platform
    python = python or sys.executable
    environ = os.environ if environ is None else environ
    if platform == "darwin":
        return launch_agent(python, environ)
    if platform == "win32":
        return startup_cmd(python, environ)
    return systemd_unit(python, environ)


# --- install / uninstall ------------------------------------------------------------------------

def _run_all(commands: Sequence[list[str]], platform: str) -> tuple[list[dict[str, object]], str | None]:
    """Run the activation commands when their tool works here; a missing user session is a
    note, never a failure (the unit is written and takes effect at the next login)."""
    ran: list[dict[str, object]] = []
    for argv in commands:
        if shutil.which(argv[0]) is None:
            return ran, f"{argv[0]} is not on PATH: the unit takes effect at the next login"
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as exc:
            return ran, f"{shlex.join(argv)} could not run ({exc}): the unit takes effect at the next login"
        ran.append({"command": shlex.join(argv), "exit_code": proc.returncode})
        if proc.returncode != 0:
            why = (proc.stderr or proc.stdout).strip().splitlines()
            session = "no user systemd session" if platform == "linux" else f"{argv[0]} refused"
            return ran, (f"{shlex.join(argv)} failed ({why[-1] if why else f'exit {proc.returncode}'}): "
                         f"{session}; the unit is written and takes effect at the next login")
    return ran, None


def install(apply: bool, unit: Unit | None = None) -> dict[str, object]:
    unit = unit or unit_for()
    result: dict[str, object] = {"action": "install-login", "platform": unit.platform, "path": str(unit.path),
                                 "applied": apply, "enable": [shlex.join(c) for c in unit.enable]}
    if unit.platform == "linux":
        result["start_now"] = f"systemctl --user enable --now {SERVICE}"
    if unit.secrets_skipped:
        result["secrets_not_written"] = unit.secrets_skipped
        result["secrets_hint"] = ("put them in ~/.config/system1/daemon.env (NAME=value lines, chmod 600)"
                                  if unit.platform == "linux" else
                                  "set them in the login environment; a daemon without them has other "
                                  "settings, and the CLI then answers in-process")
    if not apply:
        result["content"] = unit.content
        return result
    try:
        unit.path.parent.mkdir(parents=True, exist_ok=True)
        if unit.log_dir is not None:
            unit.log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        unit.path.write_text(unit.content, encoding="utf-8", newline="")
    except OSError as exc:
        result["error"] = {"code": "daemon_error", "message": f"cannot write {unit.path}: {exc}"}
        return result
    result["ran"], note = _run_all(unit.enable, unit.platform)
    if note:
        result["note"] = note
    return result


def uninstall(apply: bool, unit: Unit | None = None) -> dict[str, object]:
    unit = unit or unit_for()
    result: dict[str, object] = {"action": "uninstall-login", "platform": unit.platform, "path": str(unit.path),
                                 "applied": apply, "installed": unit.path.exists(),
                                 "disable": [shlex.join(c) for c in unit.disable]}
    if not apply or not unit.path.exists():
        return result
    ran, note = _run_all(unit.disable[:1], unit.platform)  # disable while systemd still knows the unit
    try:
        unit.path.unlink()
    except OSError as exc:
        result["error"] = {"code": "daemon_error", "message": f"cannot remove {unit.path}: {exc}"}
        return result
    if not note and unit.disable[1:]:
        more, note = _run_all(unit.disable[1:], unit.platform)
        ran += more
    result["ran"], result["removed"] = ran, True
    if note:
        result["note"] = note
    return result
