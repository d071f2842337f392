"""A loopback mock of the Anthropic Messages API, for driving the real `claude` CLI.

It follows the documented wire format (POST /v1/messages, JSON or SSE stream with
message_start / content_block_* / message_delta / message_stop) and records every request
body, so tests can assert on what Claude Code sent (hook context, tool results, tools[]).

The model's replies are scripted by the test: `script(body) -> list of blocks`, where a
block is {"type": "text", "text": ...} or {"type": "tool_use", "name": ..., "input": {...}}.
The default script ends every turn with a short text. A request without tools (Claude
Code's side requests: titles, summaries) always gets a short text.

    with MockAnthropic(script) as api:
        env["ANTHROPIC_BASE_URL"] = api.url
        ...
        api.requests  # recorded bodies, in order
"""

from __future__ import annotations

import itertools
import json
import threading
from typing import Any, Callable

from local_http import LocalServer, QuietHandler

Script = Callable[[dict[str, Any]], list[dict[str, Any]]]
MODEL_FALLBACK = "claude-mock"


def last_user_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The content blocks of the last user message (a string content becomes one text block)."""
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    return []


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in last_user_blocks(body) if b.get("type") == "tool_result"]


def user_text(body: dict[str, Any]) -> str:
    """All the text the model is given besides its own turns: user messages (prompts, tool
    results) and the mid-conversation `system` messages Claude Code 2.1.332 puts hook context
    and environment reminders in, joined."""
    parts = []
    for message in body.get("messages", []):
        if message.get("role") == "assistant":
            continue
        content = message.get("content")
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
            if block.get("type") == "text":
                parts.append(block.get("text", ""))
            elif block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, str):
                    parts.append(inner)
                elif isinstance(inner, list):
                    parts.extend(b.get("text", "") for b in inner if isinstance(b, dict))
    return "\n".join(parts)


def default_script(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": "done." if tool_results(body) else "ok."}]


def side_text(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": "Mock title"}]


def classifier_allows(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Side requests where auto mode's own classifier (CLAUDE_CODE_AUTO_MODE_SERVER=0: Claude
    Code asks it with its own request, "You are a security monitor…") grades every action as
    routine, in the `<severity>N</severity>` form its prompt asks for (N < 50 allows)."""
    system = json.dumps(body.get("system", ""))
    if "security monitor" in system:
        return [{"type": "text", "text": "<severity>5</severity>"}]
    return side_text(body)


class MockAnthropic:
    def __init__(self, script: Script = default_script, side: Script = side_text):
        """`script` answers the agent loop's requests (those with tools), `side` the rest."""
        self.script = script
        self.side = side
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._local: LocalServer | None = None
        self.url = ""

    def __enter__(self) -> "MockAnthropic":
        self._local = LocalServer(self._handler())
        self.url = self._local.url
        return self

    def __exit__(self, *exc: Any) -> None:
        self._local.close()

    def main_requests(self) -> list[dict[str, Any]]:
        """The agent loop's requests (those that offer tools), not side requests."""
        return [r for r in self.requests if r.get("tools")]

    def _reply(self, body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        with self._lock:
            self.requests.append(body)
            n = next(self._ids)
        blocks = self.script(body) if body.get("tools") else self.side(body)
        content = []
        for i, block in enumerate(blocks):
            if block["type"] == "tool_use":
                content.append({"type": "tool_use", "id": f"toolu_mock{n:04d}{i}", "name": block["name"],
                                "input": block.get("input", {})})
            else:
                content.append({"type": "text", "text": block.get("text", "")})
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        message = {"id": f"msg_mock{n:06d}", "type": "message", "role": "assistant",
                   "model": body.get("model") or MODEL_FALLBACK, "content": content, "stop_reason": stop,
                   "stop_sequence": None,
                   "usage": {"input_tokens": 100 + n, "output_tokens": 10, "cache_creation_input_tokens": 0,
                             "cache_read_input_tokens": 0}}
        return message, content

    def _handler(self) -> type[QuietHandler]:
        mock = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"
            _send = QuietHandler.send_json

            def do_GET(self) -> None:
                self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": "mock"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                path = self.path.split("?")[0]
                if path == "/v1/messages/count_tokens":
                    self._send(200, {"input_tokens": 100})
                    return
                if path != "/v1/messages":
                    self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
                    return
                body = json.loads(raw or b"{}")
                message, content = mock._reply(body)
                if not body.get("stream"):
                    self._send(200, message)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                start = {**message, "content": [], "stop_reason": None,
                         "usage": {**message["usage"], "output_tokens": 1}}
                events = [("message_start", {"type": "message_start", "message": start})]
                for index, block in enumerate(content):
                    if block["type"] == "tool_use":
                        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                       "content_block": {**block, "input": {}}}))
                        events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                       "delta": {"type": "input_json_delta",
                                                 "partial_json": json.dumps(block["input"])}}))
                    else:
                        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                       "content_block": {"type": "text", "text": ""}}))
                        events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                       "delta": {"type": "text_delta", "text": block["text"]}}))
                    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
                events.append(("message_delta", {"type": "message_delta",
                                                 "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                                 "usage": {"output_tokens": message["usage"]["output_tokens"]}}))
                events.append(("message_stop", {"type": "message_stop"}))
                for name, data in events:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

        return Handler
