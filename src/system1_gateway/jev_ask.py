"""`jev-ask`: one judgment from a shell, answered in the order the Pi extension uses.

    jev-ask request.json                      # or: jev-ask < request.json
    jev-ask - --model jev-1.13.0 --pretty     # another Jev model for this call (Jev-only order)

The order comes from the Pi extension's `$PI_CODING_AGENT_DIR/system1.json` (pi_settings.py)
and runs as `system1 judge --chain …`: cooldowns, billing consent, the audit and the warm
daemon stay the gateway's, and the answer, stdout and exit code (0 answered, 1 the chain
failed, 2 invalid input) are exactly system1's. Nothing here asks for a key: the jev rung
reads SYSTEM1_JEV_API_KEY as it always does. Stdlib only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from .console import EXIT_FAILED, EXIT_INVALID
from .console import JsonArgumentParser as _Parser
from .console import emit as _emit
from .console import invalid as _invalid
from .pi_settings import JEV, PiSettingsError, gateway_chain, read_order, settings_path


def _parser() -> _Parser:
    parser = _Parser(prog="jev-ask", description="Judge one request (state + typed questions) in the Pi "
                                                 "extension's order ($PI_CODING_AGENT_DIR/system1.json).")
    parser.add_argument("file", nargs="?", default="-", help="request file (default: stdin)")
    parser.add_argument("--model", metavar="M", help="the Jev model for this call (only when the order is Jev alone)")
    parser.add_argument("--pretty", action="store_true", help="indent the JSON for humans")
    return parser


def system1_command() -> str | None:
    """The `system1` script of this installation (next to this interpreter), else on PATH: the
    one installed with this module answers with the same code."""
    here = Path(sys.executable).parent
    for name in ("system1", "system1.exe"):
        if (here / name).is_file():
            return str(here / name)
    return shutil.which("system1")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    path = settings_path()
    try:
        order = read_order(path)
    except PiSettingsError as exc:
        _emit(_invalid(str(exc)), args.pretty)
        return EXIT_INVALID
    env = dict(os.environ)
    if args.model is not None:
        # SYSTEM1_JEV_MODEL reaches the rung named `jev` only: with other rungs in the order
        # the override would silently apply to part of the chain.
        if order != [JEV]:
            _emit(_invalid(f"--model: a model override needs a singleton Jev chain (expected the order [\"jev\"]; "
                           f"{path} sets {', '.join(order)})"), args.pretty)
            return EXIT_INVALID
        if not args.model.strip():
            _emit(_invalid("--model: empty (expected a Jev model name, e.g. jev-1.13.0)"), args.pretty)
            return EXIT_INVALID
        env["SYSTEM1_JEV_MODEL"] = args.model
    command = system1_command()
    if command is None:
        sys.stderr.write(f"jev-ask: the `system1` command was not found (looked in {Path(sys.executable).parent} "
                         f"and on PATH); install system1-gateway in this environment\n")
        return EXIT_FAILED
    call = [command, "judge", args.file, "--chain", ",".join(gateway_chain(order)), *(["--pretty"] * args.pretty)]
    try:
        # stdin, stdout and stderr are passed through: the request streams in, the answer out.
        code = subprocess.run(call, env=env).returncode
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        sys.stderr.write(f"jev-ask: cannot run {command}: {exc.strerror or exc}\n")
        return EXIT_FAILED
    return code if code >= 0 else EXIT_FAILED  # killed by a signal: the chain did not answer


if __name__ == "__main__":
    sys.exit(main())
