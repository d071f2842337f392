"""A loopback mock of the OpenAI chat-completions API as the Pi coding agent calls it
(POST /v1/chat/completions, `stream: true`, SSE `chat.completion.chunk`s, tool calls as
streamed `tool_calls` deltas, a final usage chunk), for driving the real `pi`.

Every request body is recorded. The model's turn is scripted by the test:
`script(body) -> ("text", str) | ("tool", name, arguments)`; the default calls no tool and
ends the turn, and a turn whose newest messages carry a tool result always ends with a text
that quotes the last tool result (so a test can see what came back).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from typing import Any, Callable

from local_http import LocalServer, QuietHandler

Script = Callable[[dict[str, Any]], tuple]


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def after_last_user(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages", [])
    last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    return messages[last + 1:]


def last_user_text(body: dict[str, Any]) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return text_of(users[-1].get("content")) if users else ""


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in after_last_user(body) if m.get("role") == "tool"]


def default_script(body: dict[str, Any]) -> tuple:
    return ("text", "ok.")


class MockOpenAIChat:
    def __init__(self, script: Script = default_script):
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._local: LocalServer | None = None
        self.url = ""

    def __enter__(self) -> "MockOpenAIChat":
        self._local = LocalServer(self._handler(), path="/v1")
        self.url = self._local.url
        return self

    def __exit__(self, *exc: Any) -> None:
        self._local.close()

    def models_json(self) -> dict[str, Any]:
        """$PI_CODING_AGENT_DIR/models.json naming this mock as provider `mock`, model `mock-model`."""
        return {"providers": {"mock": {
            "baseUrl": self.url, "api": "openai-completions", "apiKey": "sk-fake-mock-key",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": "mock-model", "name": "Mock Model", "reasoning": False, "contextWindow": 32000,
                        "maxTokens": 1024}]}}}

    def _turn(self, body: dict[str, Any]) -> tuple:
        tools = tool_messages(body)
        if tools:
            return ("text", "Tool said: " + text_of(tools[-1].get("content")))
        return self.script(body)

    def _handler(self) -> type[QuietHandler]:
        mock = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with mock._lock:
                    mock.requests.append(body)
                    n = next(mock._ids)
                turn = mock._turn(body)
                cid, model = f"chatcmpl-mock-{n}", body.get("model", "mock-model")

                def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
                    return {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

                if turn[0] == "tool":
                    arguments = json.dumps(turn[2])
                    events = [chunk({"role": "assistant", "content": None, "tool_calls": [
                        {"index": 0, "id": f"call_{n}", "type": "function", "function": {"name": turn[1], "arguments": ""}}]}),
                        chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
                        chunk({}, finish="tool_calls")]
                else:
                    events = [chunk({"role": "assistant", "content": ""}), chunk({"content": turn[1]}), chunk({}, finish="stop")]
                if body.get("stream_options", {}).get("include_usage"):
                    events.append({**chunk({}), "choices": [],
                                   "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in events:
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        return Handler
