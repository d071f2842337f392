"""The MCP face: five read-only tools over the gateway core, on the official `mcp` SDK.

This is the only module that imports `mcp` (an SDK change touches this file alone). It uses
the SDK's low-level `Server`, which serves both protocol eras (legacy `initialize` and
2026-07-28 `server/discover`) on one stdio connection, so the tool schemas are exactly the
gateway's own (generated from model/requests.py and results.py) and argument errors carry the
gateway's messages.

Behaviour: stdout carries only protocol (the SDK moves fd 1 to stderr while serving; logs go
to stderr and `log_file`); engine work runs in worker threads so concurrent calls are served
concurrently and a cancelled call stops waiting; the embedded models load in the background
after the first `tools/list`, never before the handshake — unless the per-user daemon serves
this user's settings: then decide/judge/health/status are sent to it (class Delegation) and
no second copy of the engine is loaded here.

Errors: an unknown tool and malformed `tools/call` params are JSON-RPC protocol errors
(-32602) whose message and data name the tool or the field; invalid *arguments* of a known
tool are tool errors (`isError: true`) the model can correct. The published schemas are
portable JSON Schema (no pydantic `discriminator`), so strict validators accept them.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from typing import Any, Callable

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from . import __version__
from .core.gateway import Gateway, freeze_heap
from .daemon import client, dispatch
from .logs import LOGGER, configure
from .model.errors import INVALID_REQUEST

log = logging.getLogger(LOGGER)

INSTRUCTIONS = (
    "Use system1_decide (one question, options) or system1_judge (typed questions over a state) for small, "
    "recurring judgments — is this command destructive, which option fits — answered in milliseconds with "
    "probabilities.\nDo not use them for open-ended reasoning; when a result is abstained or an error, "
    "reason it through yourself."
)

READ_ONLY = types.ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}


def _schemas() -> dict[str, dict[str, Any]]:
    from .model.results import json_schemas, tool_output_schemas

    return {**json_schemas(), **tool_output_schemas()}


class Delegation:
    """decide/judge/health/status go to the per-user daemon when one with this process's
    settings answers (daemon/client.py; autostarted when `[serve] autostart` allows), else to the
    in-process gateway. decide/judge results then start with a `daemon` attempt
    saying which path answered; health and status keep their exact schemas."""

    def __init__(self, gateway: Gateway, delegate: bool = True):
        self.gateway = gateway
        self.delegate = delegate  # False inside a server (its /mcp): it is the warm engine

    def answer(self, kind: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if not self.delegate:
            return (self.gateway.decide if kind == "decide" else self.gateway.judge)(arguments)
        routed = dispatch.ask(f"/v1/{kind}", arguments)
        if routed.result is not None:
            return routed.result
        return dispatch.in_process(self.gateway, kind, arguments, None, routed)

    def report(self, kind: str) -> dict[str, Any]:
        daemon = client.find() if self.delegate else None
        if daemon is not None:
            try:
                return daemon.get(f"/v1/{kind}", client.peek().deadline_s + client.MARGIN_S)
            except client.DaemonUnavailable as exc:
                log.info("daemon %s failed (%s): answering in-process", kind, exc)
        return self.gateway.health() if kind == "health" else self.gateway.status()

    def warm(self) -> None:
        """Load the models in-process only when no daemon serves (or could be started): one
        copy of the engine per user, not one per MCP client."""
        if not self.delegate:
            self.gateway.warm()
            freeze_heap()  # a long-running server: start-up objects out of the collector's way
            return
        settings = client.peek()
        daemon, _ = client.locate(settings)
        if daemon is None and settings.autostart:
            daemon, _, _ = dispatch.start_daemon(settings)
        if daemon is None:
            self.gateway.warm()


class Tools:
    """The tool table: name → (description, input schema, output schema, handler)."""

    def __init__(self, gateway: Gateway, delegate: bool = True):
        self.gateway = gateway
        self.delegation = delegation = Delegation(gateway, delegate)
        s = _schemas()
        self.table: dict[str, tuple[str, str, dict, dict, Callable[[dict], dict]]] = {
            "system1_decide": (
                "Decide", "Ask one question with 2-50 options (yes/no when options are omitted); returns the "
                "decision, its probabilities and confidence, or status 'abstained' when the engine is unsure.",
                s["decide_request"], s["decide_response"], lambda a: delegation.answer("decide", a)),
            "system1_judge": (
                "Judge", "Answer typed questions (noul yes/no, choice, score) about a state (text, object or "
                "list) in one pass; returns an answer with probabilities per question id.",
                s["judge_request"], s["judge_result"], lambda a: delegation.answer("judge", a)),
            "system1_health": (
                "Health", "Probe every provider of the chain: ok, degraded (first rung down, a later one up) "
                "or down, with one probe result per provider.",
                NO_ARGUMENTS, s["health"], lambda a: delegation.report("health")),
            "system1_capabilities": (
                "Capabilities", "Version, schema versions, provider chain, thresholds and the full request and "
                "response JSON Schemas.",
                NO_ARGUMENTS, s["capabilities"], lambda a: self.gateway.capabilities()),
            "system1_status": (
                "Status", "Configured provider order, the last actual route and today's request, abstention "
                "and error counts.",
                NO_ARGUMENTS, s["status"], lambda a: delegation.report("status")),
        }

    def list(self) -> list[types.Tool]:
        return [
            types.Tool(name=name, title=title, description=desc, input_schema=inp, output_schema=out,
                       annotations=READ_ONLY)
            for name, (title, desc, inp, out, _) in self.table.items()
        ]


def _result(payload: dict[str, Any], is_error: bool, text: str | None = None) -> types.CallToolResult:
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text + "\n" + body if text else body)],
        structured_content=payload,
        is_error=is_error,
    )


def _error_text(message: str) -> str:
    return f"{INVALID_REQUEST}: {message}"


class GatewayProtocolError(MCPError):
    """A JSON-RPC error the gateway raises itself (told apart from the SDK's own)."""


# What a malformed request's fields should have been, for the error message.
EXPECTED = {
    ("tools/call", "params"): 'an object {"name": <tool>, "arguments": {...}}',
    ("tools/call", "params.name"): "the name of a tool from tools/list, a string",
    ("tools/call", "params.arguments"): "an object holding the tool's arguments, or no arguments field",
}
PROBLEMS = {"missing": "required field is missing", "string_type": "not a string", "dict_type": "not an object",
            "model_type": "not an object", "list_type": "not an array", "int_type": "not an integer",
            "bool_type": "not a boolean"}
EXPECTED_BY_TYPE = {"string_type": "a string", "dict_type": "an object", "model_type": "an object",
                    "list_type": "an array", "int_type": "an integer", "bool_type": "a boolean"}


def _invalid_params(method: str, exc: ValidationError) -> GatewayProtocolError:
    """-32602 whose message and data name each bad field and what it should be."""
    errors = []
    for e in exc.errors(include_url=False):
        if e["loc"][-1:] == ("_meta",):
            continue  # the 2026-07-28 surface wants _meta; a legacy request carries none
        field = ".".join(str(part) for part in e["loc"]) or "params"
        expected = EXPECTED.get((method, field)) or EXPECTED_BY_TYPE.get(e["type"], f"see the MCP schema of {method}")
        errors.append({"field": field, "problem": PROBLEMS.get(e["type"], e["msg"]), "expected": expected})
    errors = errors or [{"field": "params", "problem": "invalid", "expected": f"see the MCP schema of {method}"}]
    text = "; ".join(f"{e['field']}: {e['problem']} (expected {e['expected']})" for e in errors)
    return GatewayProtocolError(types.INVALID_PARAMS, f"Invalid params for {method}: {text}",
                                {"method": method, "errors": errors})


def _not_initialized(method: str) -> GatewayProtocolError:
    # -32602, the code the SDK (and the 2026-07-28 envelope check) gives this request: it
    # lacks both an initialize handshake before it and the per-request envelope in _meta.
    return GatewayProtocolError(
        types.INVALID_PARAMS,
        f"{method} before initialize: send initialize (then notifications/initialized) first, or use the "
        "2026-07-28 protocol, which needs no initialize: io.modelcontextprotocol/protocolVersion and "
        "io.modelcontextprotocol/clientCapabilities in params._meta of every request",
        {"method": method, "expected": "initialize"},
    )


async def explain_protocol_errors(ctx: Any, call_next: Callable) -> Any:
    """Server middleware: the SDK's bare -32602 ("Invalid request parameters", empty data)
    becomes one that says what was wrong (the field, or the missing handshake)."""
    try:
        return await call_next(ctx)
    except ValidationError as exc:
        if ctx.request_id is None:
            raise
        raise _invalid_params(ctx.method, exc) from None
    except GatewayProtocolError:
        raise
    except MCPError as exc:
        # The SDK's pre-initialize gate: legacy connection, no initialize recorded yet.
        if (exc.code == types.INVALID_PARAMS and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
                and ctx.session.client_params is None and ctx.method not in ("initialize", "ping")):
            raise _not_initialized(ctx.method) from None
        raise


def build_server(gateway: Gateway | None = None, delegate: bool = True) -> Server:
    """The MCP server over `gateway`. `delegate`: send decide/judge/health/status to the warm
    daemon when one runs (the stdio server); False for the HTTP server's own /mcp."""
    gateway = gateway or dispatch.gateway()
    tools = Tools(gateway, delegate)
    warm_started = threading.Event()

    def warm_in_background() -> None:
        # After the handshake (first tools/list), so loading never delays it.
        if not warm_started.is_set():
            warm_started.set()
            threading.Thread(target=tools.delegation.warm, name="system1-warm", daemon=True).start()

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        warm_in_background()
        return types.ListToolsResult(tools=tools.list())

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        entry = tools.table.get(params.name)
        if entry is None:
            # A protocol error, not a tool result (spec: tools › error handling).
            known = list(tools.table)
            raise GatewayProtocolError(
                types.INVALID_PARAMS, f"Unknown tool: {params.name} (this server's tools: {', '.join(known)})",
                {"name": params.name, "tools": known})
        arguments = params.arguments or {}
        handler, input_schema = entry[4], entry[2]
        if input_schema is NO_ARGUMENTS and arguments:
            message = f"{next(iter(arguments))}: unknown field (this tool takes no arguments)"
            return _result({"status": "error", "error": {"code": INVALID_REQUEST, "message": message}},
                           True, _error_text(message))
        warm_in_background()
        # Off the event loop; a cancelled call (notifications/cancelled) stops waiting at once.
        result = await anyio.to_thread.run_sync(handler, arguments, abandon_on_cancel=True)
        error = result.get("error") if isinstance(result, dict) else None
        if error and error.get("code") == INVALID_REQUEST:
            return _result(result, True, _error_text(error["message"]))
        return _result(result, False)

    server = Server(
        "system1-gateway",
        version=__version__,
        title="System-1 Gateway",
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    server.middleware.append(explain_protocol_errors)  # innermost: sees the SDK's own errors
    return server


def _unreadable_reply(exc: Exception) -> SessionMessage:
    """JSON-RPC's answer to a line that is not JSON (-32700) or not a message (-32600)."""
    errors: list[Any] = getattr(exc, "errors", lambda: [])()
    not_json = any(e.get("type") == "json_invalid" for e in errors)
    code, what = (types.PARSE_ERROR, "Parse error: not JSON") if not_json else (
        types.INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message")
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=what)))


async def serve_stdio(server: Server | None = None) -> None:
    server = server or build_server()
    async with stdio_server() as (wire_in, write_stream):
        # The SDK drops unreadable lines silently; JSON-RPC wants an error reply (id null).
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def answer_unreadable_lines() -> None:
            async with send:
                async for item in wire_in:
                    if isinstance(item, Exception):
                        log.warning("unreadable line on stdin: %s", type(item).__name__)
                        await write_stream.send(_unreadable_reply(item))
                    else:
                        await send.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(answer_unreadable_lines)
            await server.run(receive, write_stream, server.create_initialization_options())


def _terminate(*_: Any) -> None:
    logging.shutdown()
    sys.stdout.flush()
    os._exit(0)


def main() -> int:
    # SIGTERM ends the server at once with exit code 0. Not via SystemExit: the SDK's stdin
    # reader thread may sit in a blocking read and hold interpreter shutdown. Every message
    # is written whole, so stopping between writes leaves the stream well-formed.
    signal.signal(signal.SIGTERM, _terminate)
    gateway = dispatch.gateway()
    gw = gateway.config.gateway
    configure(gw.log_level, gw.log_file)
    try:
        anyio.run(serve_stdio, build_server(gateway))
    except KeyboardInterrupt:
        pass
    finally:
        gateway.close()  # stdin EOF: free HTTP clients, threads and the state file
    return 0
