"""What Pi 1.x added, used by the gateway (Pi 1.6.0, headless, against the loopback mock of the
OpenAI chat API that scripts the model's tool calls): the gateway as one of Pi's classifier
models (`system1/waterfall`, registered by the extension), and the gateway's stdio MCP server
(`system1 mcp`) through Pi's native MCP client (`mcp.json`)."""

from __future__ import annotations

import json

from mock_openai_chat import MockOpenAIChat, text_of, tool_messages
from pi_harness import CLI, EXAMPLE, MOCK_RUNGS, PiHome, call_tool

# A codemode script (Pi's built-in classifier consumer): list the classifiers, then ask the
# gateway's through `models.classify()` with Pi's own question shapes.
CLASSIFY = """const listed = await models.getAvailableOfType("classifier", "system1");
console.log(JSON.stringify(listed.map((m) => `${m.provider}/${m.id}`)));
const model = await models.getModelOfType("classifier", "system1", "waterfall");
return await models.classify(model, {
  state: { message: "The tests passed." },
  questions: {
    passed: { type: "bool", instructions: "Did the tests pass?", criteria: { true: "they passed", false: "they did not" } },
    kind: { type: "choice", instructions: "What kind of message is this?", criteria: { status: "a status report", question: "a question" } },
    quality: { type: "score", instructions: "How informative is it?", criteria: ["not at all", "somewhat", "very"] },
  },
});"""


def test_pis_classifier_consumer_is_answered_by_the_gateway_in_pis_order(tmp_path):
    home = PiHome(tmp_path)
    home.write_settings({"waterfall": ["openai", "jev"]})  # Pi's order: the OpenAI rung first
    with MockOpenAIChat(call_tool("codemode", {"code": CLASSIFY})) as api:
        proc = home.print_mode(api, "Classify the message", extra=("-e", "builtin:codemode", "--tools", "+codemode"))
    assert proc.returncode == 0, proc.stderr
    assert any(t["function"]["name"] == "codemode" for t in api.requests[0]["tools"])
    seen = text_of(tool_messages(api.requests[-1])[-1]["content"])  # the tool result the model receives
    assert seen.startswith("Script completed"), seen
    assert '["system1/waterfall"]' in seen  # listed as available: the extension registered it
    result = json.loads(seen[seen.index("{"):seen.rindex("<console_output>")])
    assert result["provider"] == "system1" and result["model"] == "waterfall" and result["stopReason"] == "stop"
    answers = result["answers"]
    assert answers["passed"] == {"type": "bool", "probability": 0.9}
    assert answers["kind"]["type"] == "choice" and answers["kind"]["choice"] in ("status", "question")
    assert set(answers["kind"]["probabilities"]) == {"status", "question"}
    assert answers["quality"]["type"] == "score" and 0 <= answers["quality"]["score"] <= 2
    assert home.judge_calls() == 1  # one judge request reached the gateway
    route = home.system1("status")["last_route"]
    assert route["provider"] == "openai" and route["model"] == "openai-mock", route  # in system1.json's order


def test_a_classifier_call_with_no_backend_is_an_error_result_not_a_crash(tmp_path):
    home = PiHome(tmp_path)
    with MockOpenAIChat(call_tool("codemode", {"code": CLASSIFY})) as api:
        proc = home.print_mode(api, "Classify the message", extra=("-e", "builtin:codemode", "--tools", "+codemode"),
                               env={"SYSTEM1_CLI": str(tmp_path / "no-such-system1")})
    assert proc.returncode == 0, proc.stderr
    seen = text_of(tool_messages(api.requests[-1])[-1]["content"])
    result = json.loads(seen[seen.index("{"):seen.rindex("<console_output>")])
    assert result["stopReason"] == "error" and "not installed" in result["errorMessage"] and result["answers"] == {}


def test_pis_native_mcp_client_calls_the_gateways_mcp_server(tmp_path):
    # MCP calls run in the gateway's own order (config.toml), not system1.json's: here Jev's mock.
    home = PiHome(tmp_path, config='[gateway]\nprovider = "jev"\nfallback = []\n' + MOCK_RUNGS)
    # The entry docs/pi.md gives, with `direct` exposure so the model calls the tool itself
    # (the default, codemode, reaches it from scripts).
    (home.agent / "mcp.json").write_text(json.dumps({"mcpServers": {"system1": {
        "command": str(CLI), "args": ["mcp"], "exposure": "direct"}}}))
    with MockOpenAIChat(call_tool("mcp__system1__system1_judge", EXAMPLE)) as api:
        proc = home.print_mode(api, "Judge the test output with System 1", extra=("-e", "builtin:mcp"))
    assert proc.returncode == 0, proc.stderr
    declared = [t["function"]["name"] for t in api.requests[0]["tools"]]
    assert {"mcp__system1__system1_judge", "mcp__system1__system1_status"} <= set(declared), declared
    seen = text_of(tool_messages(api.requests[-1])[-1]["content"])
    result = json.loads(seen[seen.index("{"):])
    assert result["status"] == "answered" and result["provider"] == "jev", seen
    assert result["answers"]["passed"]["p_true"] == 0.9 and set(result["answers"]) == {"passed", "kind", "quality"}
    assert home.judge_calls() == 1
