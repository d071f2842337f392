"""`system1 install-pi`: put the Pi extension where Pi loads it.

Pi loads `$PI_CODING_AGENT_DIR/extensions/*/index.ts` at start, one level deep,
so the extension shipped in this package (`pi_extension/`, package data)
is copied to `extensions/system1/`. A copy, not a link: it keeps working when this
checkout or venv moves, and `install-pi --apply` after an upgrade replaces it. Stdlib only.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import system1_gateway

from .pi_settings import agent_dir

NAME = "system1"
ENTRY = "index.ts"  # what Pi looks for in each directory under extensions/


def source() -> Path:
    """The extension as this installation ships it."""
    return Path(system1_gateway.__file__).parent / "pi_extension"


def target() -> Path:
    return agent_dir() / "extensions" / NAME


def missing(src: Path) -> str | None:
    """Why `src` cannot be installed, or None."""
    if not src.is_dir():
        return f"the Pi extension directory {src} does not exist (this installation ships no Pi extension)"
    if not (src / ENTRY).is_file():
        return f"the Pi extension directory {src} has no {ENTRY} (Pi loads extensions/<name>/{ENTRY})"
    return None


def install(src: Path, dest: Path) -> None:
    """Copy `src` to `dest`, replacing an older copy. The new tree is staged in a hidden
    directory next to `dest` (same file system, and two levels deep, where Pi does not look
    for extensions) and renamed into place, the old one renamed aside first: a Pi starting
    meanwhile sees the old copy or the new one, never half of one. Raises OSError; the old
    copy is put back when the new one cannot take its place."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}-install-", dir=dest.parent))
    try:
        fresh = staging / dest.name
        shutil.copytree(src, fresh, ignore=shutil.ignore_patterns("__pycache__"))
        old = staging / "old"
        had = dest.exists() or dest.is_symlink()
        if had:
            os.replace(dest, old)  # a directory cannot be renamed over a non-empty one
        try:
            os.replace(fresh, dest)
        except OSError:
            if had:
                os.replace(old, dest)
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
