"""The MCP face through the official SDK client: in-process, and as a subprocess in both eras."""

import json
import os
import sys

import pytest
from mcp import Client, MCPError, StdioServerParameters

from system1_gateway.core.gateway import Gateway
from system1_gateway.mcp_server import build_server
from system1_gateway.model.results import decide_response_adapter, judge_result_adapter

pytestmark = pytest.mark.anyio

TOOLS = ["system1_decide", "system1_judge", "system1_health", "system1_capabilities", "system1_status"]
JUDGE = {"state": "kubectl delete namespace staging", "questions": {
    "d": {"type": "noul", "instructions": "Is it destructive?"},
    "t": {"type": "choice", "instructions": "Which tool?", "criteria": ["run_shell", "read_file"]}}}


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def mock_env(monkeypatch):
    monkeypatch.setenv("SYSTEM1_PROVIDER", "mock")
    return {**os.environ}


def server_params(env):
    return StdioServerParameters(command=sys.executable, args=["-I", "-m", "system1_gateway"], env=env)


async def call_every_tool(client):
    listed = (await client.list_tools()).tools
    assert [t.name for t in listed] == TOOLS
    for tool in listed:
        assert tool.annotations.read_only_hint is True and tool.annotations.destructive_hint is False
        assert tool.input_schema["type"] == "object" and tool.output_schema["type"] == "object"
        assert tool.description
    decide = await client.call_tool("system1_decide", {"question": "Is `rm -rf build/` destructive?"})
    assert not decide.is_error
    decide_response_adapter.validate_python(decide.structured_content)
    assert json.loads(decide.content[0].text) == decide.structured_content
    judge = await client.call_tool("system1_judge", JUDGE)
    judge_result_adapter.validate_python(judge.structured_content)
    assert set(judge.structured_content["answers"]) == {"d", "t"}
    health = await client.call_tool("system1_health", {})
    assert health.structured_content["status"] == "ok"
    caps = await client.call_tool("system1_capabilities", {})
    assert caps.structured_content["schemas"]["decide_request"]["properties"]["question"]["maxLength"] == 8000
    status = await client.call_tool("system1_status", {})
    assert status.structured_content["order"] == ["mock"]
    assert status.structured_content["today"]["requests"] >= 2
    with pytest.raises(MCPError) as unknown:  # a protocol error, not an isError result
        await client.call_tool("system1_nope", {})
    assert unknown.value.code == -32602 and "Unknown tool: system1_nope" in unknown.value.message


async def test_in_process_client_lists_and_calls_every_tool(mock_env):
    async with Client(build_server(Gateway.from_environment())) as client:
        await call_every_tool(client)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_subprocess_server_in_both_eras(mock_env, mode):
    async with Client(server_params(mock_env), mode=mode) as client:
        await call_every_tool(client)


@pytest.mark.parametrize(
    "tool, arguments, expected",
    [
        ("system1_decide", {"question": "q", "options": ["a"]}, "options: List should have at least 2 items"),
        ("system1_decide", {"question": "q", "colour": "red"}, "colour: unknown field (not allowed)"),
        ("system1_decide", {}, "question: required field is missing"),
        ("system1_judge", {"state": "s", "questions": {"x": {"type": "choice", "criteria": ["a"]}}}, "questions.x.criteria"),
        ("system1_judge", {"state": "s", "questions": {"x": {"type": "maybe"}}}, "questions.x: Input tag 'maybe'"),
        ("system1_health", {"verbose": True}, "verbose: unknown field"),
    ],
)
async def test_invalid_arguments_are_tool_errors_naming_the_field(mock_env, tool, arguments, expected):
    async with Client(build_server(Gateway.from_environment())) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert expected in result.content[0].text
    assert result.structured_content["error"]["code"] == "invalid_request"


async def test_provider_failure_is_a_normal_result(mock_env, monkeypatch):
    monkeypatch.setenv("SYSTEM1_MOCK_MODE", "fail")
    async with Client(build_server(Gateway.from_environment())) as client:
        result = await client.call_tool("system1_decide", {"question": "ok?"})
    assert not result.is_error
    assert result.structured_content["status"] == "error"
    assert result.structured_content["error"]["code"] == "provider_error"


async def test_broken_config_keeps_the_server_up(monkeypatch, tmp_path):
    bad = tmp_path / "c.toml"
    bad.write_text("[gateway\n")
    env = {**os.environ, "SYSTEM1_CONFIG": str(bad)}
    async with Client(server_params(env), mode="legacy") as client:
        health = await client.call_tool("system1_health", {})
        assert health.structured_content["status"] == "down" and "invalid TOML" in health.structured_content["reason"]
        decide = await client.call_tool("system1_decide", {"question": "ok?"})
        assert not decide.is_error and decide.structured_content["error"]["code"] == "config_error"


# Portable schemas: strict JSON Schema validators (Ajv strict mode in TypeScript clients,
# see test_mcp_ts_client.py) refuse unknown keywords such as pydantic's `discriminator`.

async def published_schemas():
    async with Client(build_server(Gateway.from_environment())) as client:
        tools = (await client.list_tools()).tools
        caps = await client.call_tool("system1_capabilities", {})
    published = {f"{t.name}.input": t.input_schema for t in tools}
    published.update({f"{t.name}.output": t.output_schema for t in tools})
    published.update({f"capabilities.{k}": v for k, v in caps.structured_content["schemas"].items()})
    return published


async def test_published_schemas_use_only_json_schema_keywords(mock_env):
    from system1_gateway.model.requests import JudgeRequest
    from system1_gateway.model.schemas import nonstandard_keywords

    published = await published_schemas()
    assert len(published) == 14
    found = {name: nonstandard_keywords(schema) for name, schema in published.items()}
    assert found == {name: [] for name in published}
    # The check can fail: pydantic's own schema carries the vendor keyword.
    raw = JudgeRequest.model_json_schema()
    assert nonstandard_keywords(raw) == ["#/properties/questions/additionalProperties: discriminator"]
    # The tagged unions are still there, as plain oneOf.
    assert len(published["system1_judge.input"]["properties"]["questions"]["additionalProperties"]["oneOf"]) == 3
    assert len(published["system1_judge.output"]["properties"]["answers"]["additionalProperties"]["oneOf"]) == 4


async def test_portable_schemas_still_validate_real_requests_and_results(mock_env):
    from jsonschema import Draft202012Validator  # a dependency of mcp (its client validates outputs)

    published = await published_schemas()
    for schema in published.values():
        Draft202012Validator.check_schema(schema)
    judge_in, judge_out = (Draft202012Validator(published[f"system1_judge.{s}"]) for s in ("input", "output"))
    decide_in, decide_out = (Draft202012Validator(published[f"system1_decide.{s}"]) for s in ("input", "output"))
    request = {"state": "rm -rf /", "questions": {
        "d": {"type": "yesno", "instructions": "Destructive?"},  # an alias of noul: one oneOf branch only
        "t": {"type": "choice", "criteria": {"run_shell": "runs a command", "read_file": None}},
        "s": {"type": "score", "instructions": "How risky?", "criteria": ["low", "mid", "high"]}}}
    assert list(judge_in.iter_errors(request)) == []
    assert list(decide_in.iter_errors({"question": "Is it destructive?", "options": ["yes", "no"]})) == []
    gateway = Gateway.from_environment()
    result = gateway.judge(request)
    assert result["status"] == "answered"
    assert {a["type"] for a in result["answers"].values()} == {"noul", "choice", "score"}
    assert list(judge_out.iter_errors(result)) == []
    assert list(decide_out.iter_errors(gateway.decide({"question": "ok?"}))) == []
    # …and still reject what the models reject.
    assert not judge_in.is_valid({"state": "s", "questions": {"x": {"type": "maybe", "instructions": "?"}}})
    assert not judge_in.is_valid({"state": "s", "questions": {"x": {"type": "choice", "criteria": ["a"], "colour": 1}}})
    assert not decide_in.is_valid({"question": "q", "options": ["a"]})
    bad_answer = {**result, "answers": {"d": {**result["answers"]["d"], "type": "maybe"}}}
    assert not judge_out.is_valid(bad_answer)
