"""Where the gateway keeps its files. Environment variables win so tests and CI stay isolated."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def state_dir() -> Path:
    """`~/.system1-gateway` (or `SYSTEM1_STATE_DIR`): models cache, audit log, shared state."""
    override = os.environ.get("SYSTEM1_STATE_DIR")
    return Path(override).expanduser() if override else Path.home() / ".system1-gateway"


def config_path() -> Path:
    """`SYSTEM1_CONFIG`, else the per-OS user config file (SPEC §8)."""
    override = os.environ.get("SYSTEM1_CONFIG")
    if override:
        return Path(override).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "system1" / "config.toml"
