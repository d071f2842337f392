"""`system1 toggle on|off`: pause every decision from the next request, no restart.

A flag file in the state directory: one `stat` per request, shared by every process.
"""

from __future__ import annotations

import os
from pathlib import Path

from .paths import private_dir, state_file


def _flag() -> Path:
    return Path(state_file("paused"))


def paused() -> bool:
    return os.path.exists(state_file("paused"))


def set_paused(value: bool) -> None:
    flag = _flag()
    if value:
        private_dir(flag.parent)
        flag.write_text("paused by `system1 toggle off`; `system1 toggle on` resumes\n")
    else:
        flag.unlink(missing_ok=True)
