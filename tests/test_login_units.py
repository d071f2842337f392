"""Start-at-login units: the systemd --user unit passes `systemd-analyze verify`, the
LaunchAgent parses as a plist with launchd's keys, the Startup .cmd is right, and
install/uninstall write and remove them under a temporary HOME."""

from __future__ import annotations

import os
import plistlib
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ci_gate import require
from conftest import run_cli
from system1_gateway.daemon import login_units

ENV = {"HOME": "/home/u", "SYSTEM1_STATE_DIR": "/home/u/state dir", "SYSTEM1_PROVIDER": "mock",
       "SYSTEM1_JEV_API_KEY": "sk-secret-value", "SYSTEM1_SERVE_AUTOSTART": "0", "PATH": "/usr/bin"}


def _verify(unit_path: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    # --user needs a runtime dir; no user session is needed to verify a file.
    return subprocess.run(["systemd-analyze", "--user", "verify", str(unit_path)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)})


def _write(unit: login_units.Unit, where: Path) -> Path:
    path = where / login_units.SERVICE
    path.write_text(unit.content)
    return path


def test_systemd_unit_passes_systemd_analyze_verify(tmp_path):
    require(shutil.which("systemd-analyze") is not None, "systemd-analyze (Debian package systemd)")
    unit = login_units.systemd_unit(sys.executable, ENV)
    result = _verify(_write(unit, tmp_path), tmp_path)
    assert result.returncode == 0 and result.stderr == "" and result.stdout == "", result.stderr

    # The check can fail: verify warns about a bad value and refuses a missing interpreter.
    broken = tmp_path / "broken"
    broken.mkdir()
    path = _write(unit, broken)
    path.write_text(unit.content.replace("Restart=on-failure", "Restart=on-failur"))
    assert "restart specifier" in _verify(path, tmp_path).stderr
    missing = login_units.systemd_unit(str(tmp_path / "no-such-python"), ENV)
    assert _verify(_write(missing, broken), tmp_path).returncode != 0


def test_systemd_unit_quotes_an_interpreter_path_with_spaces_and_specifiers(tmp_path):
    require(shutil.which("systemd-analyze") is not None, "systemd-analyze (Debian package systemd)")
    odd = tmp_path / "my venv 100%" / "bin"
    odd.mkdir(parents=True)
    (odd / "python").symlink_to(sys.executable)
    unit = login_units.systemd_unit(str(odd / "python"), {**ENV, "SYSTEM1_CONFIG": '/c/"x" 5%.toml'})
    result = _verify(_write(unit, tmp_path), tmp_path)  # verify resolves ExecStart's executable
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert f'ExecStart="{odd}/python"'.replace("%", "%%") in unit.content
    assert 'Environment="SYSTEM1_CONFIG=/c/\\"x\\" 5%%.toml"' in unit.content


def test_systemd_unit_runs_the_daemon_and_does_not_restart_a_clean_idle_exit():
    unit = login_units.systemd_unit("/venv/bin/python", ENV)
    lines = unit.content.splitlines()
    assert "ExecStart=/venv/bin/python -I -m system1_gateway.cli daemon run" in lines
    assert "Restart=on-failure" in lines  # exit 0 (idle) is not a failure: it stays down
    assert "WantedBy=default.target" in lines
    assert 'Environment="SYSTEM1_STATE_DIR=/home/u/state dir"' in lines
    assert "Environment=SYSTEM1_PROVIDER=mock" in lines
    assert "sk-secret-value" not in unit.content and "SYSTEM1_JEV_API_KEY" not in unit.content
    assert "SYSTEM1_SERVE_AUTOSTART" not in unit.content  # a lifecycle switch, not a setting
    assert unit.secrets_skipped == ["SYSTEM1_JEV_API_KEY"]
    assert unit.path == Path("/home/u/.config/systemd/user/system1-gateway.service")
    assert login_units.systemd_unit("/p", {**ENV, "XDG_CONFIG_HOME": "/x"}).path == \
        Path("/x/systemd/user/system1-gateway.service")


def test_launch_agent_parses_and_has_the_keys_launchd_needs():
    unit = login_units.unit_for("darwin", "/venv/bin/python", ENV)
    plist = plistlib.loads(unit.content.encode("utf-8"))
    assert unit.path == Path("/home/u/Library/LaunchAgents/com.system1-gateway.daemon.plist")
    assert plist["Label"] == login_units.LABEL and unit.path.stem == plist["Label"]
    assert plist["ProgramArguments"] == ["/venv/bin/python", "-I", "-m", "system1_gateway.cli", "daemon", "run"]
    assert plist["RunAtLoad"] is True
    assert plist["KeepAlive"] == {"SuccessfulExit": False}  # restart after a crash only
    assert plist["EnvironmentVariables"] == {"SYSTEM1_PROVIDER": "mock", "SYSTEM1_STATE_DIR": "/home/u/state dir"}
    assert plist["StandardErrorPath"] == "/home/u/state dir/daemon/daemon.log"
    assert unit.enable[0][:2] == ["launchctl", "bootstrap"] and unit.enable[0][-1] == str(unit.path)


def test_startup_cmd_starts_the_daemon_detached():
    unit = login_units.unit_for("win32", r"C:\Program Files\py\python.exe",
                                {"APPDATA": r"C:\Users\u\AppData\Roaming", "SYSTEM1_CONFIG": r"C:\c 100%.toml",
                                 "SYSTEM1_OPENAI_API_KEY": "sk-x"})
    assert str(unit.path).endswith("Microsoft/Windows/Start Menu/Programs/Startup/system1-gateway.cmd")
    lines = unit.content.split("\r\n")
    assert lines[0] == "@echo off"
    assert 'set "SYSTEM1_CONFIG=C:\\c 100%%.toml"' in lines
    assert ('start "system1-gateway" /min "C:\\Program Files\\py\\python.exe" "-I" "-m" '
            '"system1_gateway.cli" "daemon" "start"') in lines
    assert "sk-x" not in unit.content and unit.secrets_skipped == ["SYSTEM1_OPENAI_API_KEY"]


def _fake_systemctl(bin_dir: Path, exit_code: int, stderr: str = "") -> Path:
    """systemctl as the CLI sees it, for the two outcomes a test machine cannot produce at
    will: a user session that accepts, and none at all ("Failed to connect to bus")."""
    calls = bin_dir / "calls"
    script = bin_dir / "systemctl"
    script.write_text(f'#!/bin/sh\necho "$@" >> "{calls}"\necho "{stderr}" >&2\nexit {exit_code}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return calls


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME")
    return home


def test_install_without_apply_prints_and_writes_nothing(home):
    code, out, _ = run_cli("daemon", "install-login")
    result = out[0]
    assert code == 0 and result["applied"] is False
    assert "ExecStart=" in result["content"] and result["start_now"] == "systemctl --user enable --now system1-gateway.service"
    assert result["path"] == str(home / ".config/systemd/user/system1-gateway.service")
    assert not Path(result["path"]).exists()


def test_install_apply_without_a_user_session_writes_the_unit_and_says_so(home, tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    calls = _fake_systemctl(fake, 1, "Failed to connect to bus: No medium found")
    code, out, _ = run_cli("daemon", "install-login", "--apply", env={"PATH": str(fake)})
    result = out[0]
    unit = Path(result["path"])
    assert code == 0 and unit.exists() and "daemon run" in unit.read_text()
    assert "no user systemd session" in result["note"] and "Failed to connect to bus" in result["note"]
    assert calls.read_text().splitlines() == ["--user daemon-reload"]


def test_install_apply_without_systemctl_still_succeeds(home, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, _ = run_cli("daemon", "install-login", "--apply", env={"PATH": str(empty)})
    assert code == 0 and Path(out[0]["path"]).exists() and "not on PATH" in out[0]["note"]


def test_install_then_uninstall_with_a_working_systemctl(home, tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    calls = _fake_systemctl(fake, 0)
    code, out, _ = run_cli("daemon", "install-login", "--apply", env={"PATH": str(fake)})
    assert code == 0 and "note" not in out[0]
    assert [ran["command"] for ran in out[0]["ran"]] == ["systemctl --user daemon-reload",
                                                         "systemctl --user enable system1-gateway.service"]
    unit = Path(out[0]["path"])
    assert unit.exists()

    code, out, _ = run_cli("daemon", "uninstall-login", env={"PATH": str(fake)})
    assert code == 0 and out[0]["installed"] is True and unit.exists()  # without --apply: nothing changes

    code, out, _ = run_cli("daemon", "uninstall-login", "--apply", env={"PATH": str(fake)})
    assert code == 0 and out[0]["removed"] is True and not unit.exists()
    assert calls.read_text().splitlines()[-2:] == ["--user disable --now system1-gateway.service",
                                                   "--user daemon-reload"]
    code, out, _ = run_cli("daemon", "uninstall-login", "--apply", env={"PATH": str(fake)})
    assert code == 0 and out[0]["installed"] is False and "removed" not in out[0]


def test_install_apply_for_macos_and_windows_writes_under_home(tmp_path):
    env = {"HOME": str(tmp_path), "APPDATA": str(tmp_path / "AppData"), "SYSTEM1_STATE_DIR": str(tmp_path / "s")}
    for platform in ("darwin", "win32"):
        unit = login_units.unit_for(platform, "/venv/bin/python", env)
        result = login_units.install(True, unit)
        assert unit.path.is_relative_to(tmp_path) and unit.path.read_bytes().decode("utf-8") == unit.content
        assert "error" not in result
        removed = login_units.uninstall(True, unit)
        assert removed["removed"] is True and not unit.path.exists()
    assert stat.S_IMODE((tmp_path / "s" / "daemon").stat().st_mode) == 0o700  # launchd's log dir


def test_an_unwritable_unit_path_is_a_failure_naming_it(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    unit = login_units.systemd_unit("/venv/bin/python", {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(blocker)})
    result = login_units.install(True, unit)
    assert result["error"]["code"] == "daemon_error" and str(unit.path) in result["error"]["message"]
