"""`system1 smoke`: launch the installed MCP server exactly as an MCP client does (the command
`system1 install-claude` registers) and check the handshake, health and one decision.

Prints one JSON object: every check with its outcome, detail and time; exit 0 when all pass,
1 when one fails. The `mcp` SDK's own client speaks to the server, over stdio, in a child
process: the same path Claude Code takes, minus Claude Code.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

TOOLS = ["system1_decide", "system1_judge", "system1_health", "system1_capabilities", "system1_status"]
DEFAULT_QUESTION = "Is `rm -rf build/` destructive?"
STARTUP_TIMEOUT_S = 120.0  # a first decision may join and load the local model


def server_command() -> list[str]:
    """The stdio MCP server as `claude mcp add` registers it (cli.claude_command): this
    interpreter, isolated mode (-I)."""
    return [sys.executable, "-I", "-m", "system1_gateway"]


async def _checks(args: argparse.Namespace, report: list[dict[str, Any]]) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    command = server_command()
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))

    def check(name: str, ok: bool, detail: str, t0: float) -> bool:
        report.append({"check": name, "ok": ok, "detail": detail, "ms": round((time.perf_counter() - t0) * 1000, 1)})
        return ok

    t0 = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        info = init.server_info
        if not check("handshake", info.name == "system1-gateway",
                     f"{info.name} {info.version}, protocol {init.protocol_version}", t0):
            return
        t0 = time.perf_counter()
        names = [tool.name for tool in (await session.list_tools()).tools]
        if not check("tools", names == TOOLS, ", ".join(names), t0):
            return
        t0 = time.perf_counter()
        health = (await session.call_tool("system1_health", {})).structured_content or {}
        check("health", health.get("status") in ("ok", "degraded"),
              f"{health.get('status')}: " + "; ".join(f"{p.get('provider')} {'ok' if p.get('ok') else 'failing'}"
                                                      for p in health.get("providers", []) if isinstance(p, dict)), t0)
        t0 = time.perf_counter()
        arguments: dict[str, Any] = {"question": args.question}
        if args.options:
            arguments["options"] = args.options
        result = await session.call_tool("system1_decide", arguments,
                                         read_timeout_seconds=STARTUP_TIMEOUT_S)
        decision = result.structured_content or {}
        status = decision.get("status")
        detail = (f"{status}: {decision.get('decision')} ({decision.get('confidence')}) by "
                  f"{decision.get('provider')} {decision.get('model')}")
        if status == "error":
            detail = f"error {decision.get('error', {}).get('code')}: {decision.get('error', {}).get('message')}"
        check("decision", not result.is_error and status in ("decided", "abstained"), detail, t0)


def main(args: argparse.Namespace) -> dict[str, Any]:
    import anyio

    report: list[dict[str, Any]] = []
    error = None
    try:
        anyio.run(_run_bounded, args, report)
    except Exception as exc:  # noqa: BLE001 - a server that dies mid-check is a failed check, not a trace
        error = f"{type(exc).__name__}: {exc}"
    ok = bool(report) and all(item["ok"] for item in report) and error is None and len(report) == 4
    return {"ok": ok, "server": server_command(), "checks": report, "error": error}


async def _run_bounded(args: argparse.Namespace, report: list[dict[str, Any]]) -> None:
    import anyio

    with anyio.fail_after(STARTUP_TIMEOUT_S + 30):
        await _checks(args, report)
