"""`system1 serve`, the HTTP face: routes, status mapping, security, metrics, OpenAPI, lifecycle.

End-to-end tests run the real server (uvicorn in a thread through `Serving`, or a `system1
serve` subprocess) and talk to it over 127.0.0.1 with http.client; the rest use FastAPI's
TestClient on the same app.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import jsonschema
import pytest
from fastapi.testclient import TestClient

from conftest import judge_payload
from helpers.serve import KEY, call, running, serve_port, wait_ready
from system1_gateway.addresses import is_loopback
from system1_gateway.core.gateway import Gateway
from system1_gateway.http import security
from system1_gateway.http.app import create_app
from system1_gateway.http.security import MAX_BODY, loopback_hosts
from system1_gateway.http.serving import Serving
from system1_gateway.model.requests import DecideRequest, JudgeRequest
from system1_gateway.model.results import decide_response_adapter, judge_result_adapter
from system1_gateway.providers.mock import MockProvider

DECIDE = {"question": "Is `git push --force origin main` destructive?", "options": ["yes", "no"]}


@pytest.fixture
def client(mock_gateway):
    def make(api_key=None, allowed_hosts=None, **settings):
        gateway = mock_gateway(**settings)
        return TestClient(create_app(gateway, api_key=api_key, allowed_hosts=allowed_hosts))

    return make


# -- routes end to end -----------------------------------------------------------------------
def test_every_native_route_over_a_real_server(mock_gateway):
    with running(mock_gateway()) as (_, port):
        health = wait_ready(port)
        assert health["pid"] == os.getpid() and health["load_s"] is not None
        status, headers, body = call(port, "POST", "/v1/decide", {**DECIDE, "request_id": "r-1"})
        assert status == 200 and body["status"] == "decided" and body["decision"] in ("yes", "no")
        decide_response_adapter.validate_python(body)
        assert headers["x-request-id"] == "r-1" and headers["content-type"] == "application/json"
        status, _, body = call(port, "POST", "/v1/judge", judge_payload())
        assert status == 200 and body["status"] == "answered" and body["answers"]["q"]["type"] == "noul"
        judge_result_adapter.validate_python(body)
        status, _, body = call(port, "GET", "/v1/status")
        assert status == 200 and body["order"] == ["mock"] and body["today"]["requests"] >= 2
        status, _, body = call(port, "GET", "/v1/health")
        assert status == 200 and body["status"] == "ok" and body["providers"][0]["provider"] == "mock"
        status, headers, text = call(port, "GET", "/metrics")
        assert status == 200 and headers["content-type"].startswith("text/plain")
        assert 'system1_requests_total{face="http",outcome="decided",rung="mock"} 1.0' in text
        status, _, body = call(port, "GET", "/v1/models")
        assert status == 200 and body["models"]
        status, _, body = call(port, "POST", "/v1/systemone", {
            "model": "jev-1.13", "state": "rm -rf /", "questions": {"d": {"type": "noul", "instructions": "Destructive?"}}})
        assert status == 200 and "d" in body["answers"]


def test_requests_are_served_concurrently(mock_gateway):
    # Each mock answer takes 400 ms; eight at once must overlap (thread pool), not queue.
    with running(mock_gateway(latency_ms=400)) as (_, port):
        wait_ready(port)
        results, started = [], time.perf_counter()
        threads = [threading.Thread(target=lambda: results.append(call(port, "POST", "/v1/decide", DECIDE)[0]))
                   for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - started
    assert results == [200] * 8
    assert elapsed < 8 * 0.4 / 2, f"8 requests of 0.4 s took {elapsed:.2f} s: not concurrent"


# -- status mapping --------------------------------------------------------------------------
@pytest.mark.parametrize("settings, status, codes", [
    ({}, 200, {None}),
    ({"mode": "abstain"}, 200, {None}),
    ({"mode": "fail"}, 502, {"provider_error"}),
    ({"mode": "malformed"}, 502, {"malformed_response"}),
    ({"mode": "timeout"}, 504, {"provider_timeout", "deadline_exceeded"}),
])
def test_result_status_mapping(client, settings, status, codes):
    with client(**settings) as c:
        judge = c.post("/v1/judge", json={**judge_payload(), "deadline_s": 0.3})
        decide = judge if settings.get("mode") == "timeout" else c.post("/v1/decide", json=DECIDE)
    for response in (decide, judge):
        assert response.status_code == status, response.text
        assert (response.json()["error"] or {}).get("code") in codes
    if settings.get("mode") == "abstain":
        assert decide.json()["status"] == "abstained" and decide.json()["decision"] is None


def test_all_cooling_is_503_with_retry_after_of_the_soonest_rung(client):
    with client(mode="fail", failure="rate_limit") as c:
        first = c.post("/v1/decide", json=DECIDE)  # the rung fails and cools for 30 s
        second = c.post("/v1/decide", json=DECIDE)
    assert first.status_code == 502 and first.json()["error"]["code"] == "provider_error"
    assert second.status_code == 503 and second.json()["error"]["code"] == "all_cooling"
    assert 25 <= int(second.headers["retry-after"]) <= 30


def test_config_error_is_503_with_the_gateways_message(write_config):
    write_config("[gateway]\nprovider = 42\n")
    with TestClient(create_app(Gateway.from_environment())) as c:
        response = c.post("/v1/decide", json=DECIDE)
        health = c.get("/v1/health")
    assert response.status_code == 503 and response.json()["error"]["code"] == "config_error"
    assert health.status_code == 503 and health.json()["status"] == "down"


@pytest.mark.parametrize("body, field", [
    ({"question": 3}, "question"),
    ({"question": "ok", "options": ["a"]}, "options"),
    ({**DECIDE, "surprise": 1}, "surprise"),
    ({**DECIDE, "min_confidence": "high"}, "min_confidence"),
    ([1, 2], "request"),
])
def test_wrong_types_are_422_naming_the_field(client, body, field):
    with client() as c:
        response = c.post("/v1/decide", json=body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and error["message"].startswith(field), error


@pytest.mark.parametrize("raw, says", [
    (b"{not json", "not valid JSON"), (b"", "empty body"), (b"\xff\xfe\x00", "not"),
    (b"[" * 100_000, "nested too deeply"), (b'{"question": 1' + b"1" * 5000 + b"}", "not valid JSON"),
])
def test_unreadable_bodies_are_400_with_a_result_shaped_error(client, raw, says):
    with client() as c:
        decide = c.post("/v1/decide", content=raw)
        judge = c.post("/v1/judge", content=raw)
    assert decide.status_code == judge.status_code == 400
    assert says in decide.json()["error"]["message"]
    decide_response_adapter.validate_python(decide.json())
    judge_result_adapter.validate_python(judge.json())


def test_provider_query_parameter(client):
    with client() as c:
        unknown = c.post("/v1/decide?provider=nosuch", json=DECIDE)
        known = c.post("/v1/decide?provider=mock", json=DECIDE)
    assert unknown.status_code == 422
    assert unknown.json()["error"]["message"].startswith("provider: 'nosuch' is not a configured rung")
    assert known.status_code == 200 and known.json()["provider"] == "mock"


CHAIN_CONFIG = ('[gateway]\nprovider = "first"\nfallback = ["second"]\n'
                '[providers.first]\nkind = "mock"\nmode = "fail"\n'
                '[providers.second]\nkind = "mock"\nmodel = "second-model"\nanswer = "no"\n'
                '[providers.third]\nkind = "mock"\nmodel = "third-model"\nanswer = "yes"\n')


def test_a_query_cannot_send_the_owners_key_to_an_unconfigured_endpoint(write_config, monkeypatch):
    """`?chain=laya` (no [providers.laya]) is a 422 that says which rungs a call
    may name; no laya rung is built, so no key leaves for 127.0.0.1:8000."""
    from system1_gateway.providers.laya import LayaProvider

    built = []
    monkeypatch.setattr(LayaProvider, "__init__", lambda self, *a, **k: built.append(1))
    monkeypatch.setenv("SYSTEM1_LAYA_API_KEY", "k" * 20)
    write_config(CHAIN_CONFIG)
    with TestClient(create_app(Gateway.from_environment())) as c:
        for query in ("chain=laya", "provider=laya", "chain=third,laya"):
            refused = c.post(f"/v1/judge?{query}", json=judge_payload())
            assert refused.status_code == 422, query
            assert "'laya' is not a configured rung" in refused.json()["error"]["message"]
            assert "here: embedded, first, jev, mock, openai, second, third" in refused.json()["error"]["message"]
    assert built == []


def test_chain_query_parameter_sets_the_order_of_one_call(write_config):
    write_config(CHAIN_CONFIG)
    with TestClient(create_app(Gateway.from_environment())) as c:
        judged = c.post("/v1/judge?chain=first,third", json=judge_payload())
        decided = c.post("/v1/decide?chain=third,second", json=DECIDE)
        listed = c.post("/v1/decide?provider=second,third", json=DECIDE)  # ?provider= takes a list too
        default = c.post("/v1/judge", json=judge_payload())
    assert judged.status_code == 200 and judged.json()["provider"] == "third"
    assert judged.json()["order"] == ["first", "third"]
    assert [(a["provider"], a["outcome"]) for a in judged.json()["attempts"]] == [("first", "error"), ("third", "ok")]
    assert decided.status_code == 200 and decided.json()["decision"] == "yes"
    assert [a["provider"] for a in decided.json()["attempts"]] == ["third"]
    assert listed.status_code == 200 and listed.json()["provider"] == "second"
    assert default.json()["order"] == ["first", "second"] and default.json()["provider"] == "second"


@pytest.mark.parametrize("query, says", [
    ("chain=second,second", "chain: lists 'second' twice (expected each rung once)"),
    ("chain=second,,third", "chain: entry 2 of 'second,,third' is empty (expected rung names"),
    ("chain=", "chain: empty (expected rung names separated by commas"),
    ("chain=third,nosuch", "chain: 'nosuch' is not a configured rung (a call may name only"),
    ("provider=third,third", "provider: lists 'third' twice"),
    ("chain=third&provider=second", "provider, chain: both query parameters given"),
])
def test_a_bad_chain_is_422_naming_the_parameter(write_config, query, says):
    write_config(CHAIN_CONFIG)
    with TestClient(create_app(Gateway.from_environment())) as c:
        for route, adapter in (("/v1/judge", judge_result_adapter), ("/v1/decide", decide_response_adapter)):
            response = c.post(f"{route}?{query}", json=judge_payload() if route == "/v1/judge" else DECIDE)
            assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"
            assert response.json()["error"]["message"].startswith(says)
            assert response.json()["attempts"] == []
            adapter.validate_python(response.json())


def test_http_level_errors_are_json_naming_the_problem(client):
    with client() as c:
        missing = c.get("/v1/nothing")
        method = c.put("/v1/decide", json=DECIDE)
    assert missing.status_code == 404 and "/v1/nothing" in missing.json()["error"]["message"]
    assert method.status_code == 405 and method.json()["error"]["code"] == "method_not_allowed"
    assert "PUT /v1/decide" in method.json()["error"]["message"]


def test_request_id_header_only_when_safe(client):
    with client() as c:
        odd = c.post("/v1/decide", json={**DECIDE, "request_id": "line\nbreak é"})
    assert odd.status_code == 200 and odd.json()["request_id"] == "line\nbreak é"
    assert "x-request-id" not in odd.headers


# -- healthz readiness -----------------------------------------------------------------------
class SlowWarm(MockProvider):
    release = threading.Event()

    def warm(self):
        assert self.release.wait(30)


def test_healthz_says_loading_until_the_first_rung_is_warm(monkeypatch):
    monkeypatch.setenv("SYSTEM1_PROVIDER", "mock")
    gateway = Gateway.from_environment()
    gateway = Gateway(gateway.config, providers={"mock": SlowWarm("mock", {})})
    SlowWarm.release.clear()
    with running(gateway) as (_, port):
        status, _, body = call(port, "GET", "/healthz")
        assert status == 200 and body["status"] == "loading" and body["load_s"] is None
        _, _, metrics = call(port, "GET", "/metrics")
        assert "system1_ready 0.0" in metrics
        SlowWarm.release.set()
        body = wait_ready(port)
        assert body["load_s"] >= 0
        _, _, metrics = call(port, "GET", "/metrics")
        assert "system1_ready 1.0" in metrics
        assert re.search(r"^system1_engine_load_seconds \d", metrics, re.M)


# -- security --------------------------------------------------------------------------------
def test_bearer_key_is_required_everywhere_but_healthz(client, monkeypatch):
    compared = []
    real = security.hmac.compare_digest
    monkeypatch.setattr(security.hmac, "compare_digest", lambda a, b: compared.append(1) or real(a, b))
    with client(api_key=KEY) as c:
        for method, path in (("GET", "/v1/status"), ("GET", "/metrics"), ("GET", "/openapi.json"),
                             ("POST", "/v1/decide"), ("POST", "/v1/systemone"), ("POST", "/mcp")):
            response = c.request(method, path, json=DECIDE)
            assert response.status_code == 401, path
            assert response.headers["www-authenticate"].startswith("Bearer")
            assert response.json()["error"]["code"] == "unauthorized"
        wrong = c.get("/v1/status", headers={"Authorization": "Bearer " + KEY[:-1] + "x"})
        assert wrong.status_code == 401 and 'error="invalid_token"' in wrong.headers["www-authenticate"]
        assert c.get("/healthz").status_code == 200
        ok = c.post("/v1/decide", json=DECIDE, headers={"Authorization": f"Bearer {KEY}"})
        assert ok.status_code == 200 and ok.json()["status"] == "decided"
        basic = c.get("/v1/status", headers={"Authorization": f"Basic {KEY}"})
        assert basic.status_code == 401
    assert len(compared) >= 2  # the key was checked with hmac.compare_digest


def run_serve(*args, env=None, timeout=30):
    full = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "system1_gateway.cli", "serve", *args], capture_output=True,
                          text=True, timeout=timeout, env=full)


def test_non_loopback_bind_without_a_key_refuses_to_start():
    proc = run_serve("--host", "0.0.0.0", "--port", "0")
    assert proc.returncode == 2
    assert "refusing to bind 0.0.0.0: it is not a loopback address" in proc.stderr
    assert "api_key_env" in proc.stderr


def test_key_settings_are_checked_before_binding(write_config, monkeypatch):
    write_config('[serve]\napi_key_env = "S1_TEST_KEY"\n')
    proc = run_serve("--port", "0")
    assert proc.returncode == 2 and "api_key_env names S1_TEST_KEY, which is not set" in proc.stderr
    proc = run_serve("--port", "0", env={"S1_TEST_KEY": "short"})
    assert proc.returncode == 2 and "shorter than 16" in proc.stderr
    monkeypatch.setenv("S1_TEST_KEY", KEY)
    # With the key set, any bind address is allowed (checked without binding one: tests stay on loopback).
    assert Serving(host="0.0.0.0", port=0).refusal() is None
    assert Serving(host="192.168.1.10", port=0).refusal() is None
    monkeypatch.delenv("S1_TEST_KEY")
    assert "api_key_env names S1_TEST_KEY" in Serving(host="0.0.0.0", port=0).refusal()


def test_loopback_names():
    assert is_loopback("127.0.0.1") and is_loopback("::1")
    assert is_loopback("localhost") and is_loopback("127.3.4.5")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.com")
    assert loopback_hosts(8737) == {"127.0.0.1:8737", "localhost:8737", "[::1]:8737"}


def test_host_and_origin_checks_on_a_loopback_bind(mock_gateway):
    with running(mock_gateway()) as (_, port):
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
            assert call(port, "GET", "/v1/status", headers={"Host": host})[0] == 200, host
        for path in ("/v1/status", "/healthz", "/mcp"):
            status, _, body = call(port, "GET", path, headers={"Host": "evil.example.com"})
            assert status == 421 and body["error"]["code"] == "forbidden_host", path
            assert "evil.example.com" in body["error"]["message"]
        status, _, _ = call(port, "GET", "/v1/status", headers={"Host": f"127.0.0.1:{port + 1}"})
        assert status == 421
        status, _, body = call(port, "POST", "/v1/decide", DECIDE, headers={"Origin": "http://evil.example.com"})
        assert status == 403 and body["error"]["code"] == "forbidden_origin"
        status, _, _ = call(port, "POST", "/v1/decide", DECIDE, headers={"Origin": f"http://localhost:{port}"})
        assert status == 200


def raw_request(port: int, head: bytes, chunks: list[bytes]) -> tuple[int, dict]:
    """Send a request by hand (chunked bodies without Content-Length); returns (status, JSON)."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head)
        try:
            for chunk in chunks:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered 413 and closed while we were still sending
        data = b""
        while b"\r\n\r\n" not in data or len(data) < data.index(b"\r\n\r\n") + 4 + _length(data):
            more = sock.recv(65536)
            if not more:
                break
            data += more
    status = int(data.split(b" ", 2)[1])
    return status, json.loads(data.split(b"\r\n\r\n", 1)[1])


def _length(data: bytes) -> int:
    match = re.search(rb"(?i)content-length: (\d+)", data)
    return int(match.group(1)) if match else 0


def test_bodies_over_one_mebibyte_are_413(mock_gateway):
    big = json.dumps({"question": "x", "context": {"blob": "a" * MAX_BODY}}).encode()
    with running(mock_gateway()) as (_, port):
        status, _, body = call(port, "POST", "/v1/decide", big)
        assert status == 413 and body["error"]["code"] == "payload_too_large" and "1 MiB" in body["error"]["message"]
        head = (f"POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                "Transfer-Encoding: chunked\r\n\r\n").encode()
        status, body = raw_request(port, head, [big[i:i + 65536] for i in range(0, len(big), 65536)])
        assert status == 413 and body["error"]["code"] == "payload_too_large"
        # Just under the limit, chunked: read whole and answered.
        fits = json.dumps({"question": "Is this large?", "context": {"blob": "a" * (MAX_BODY - 200)}}).encode()
        assert len(fits) <= MAX_BODY
        status, body = raw_request(port, head, [fits[i:i + 65536] for i in range(0, len(fits), 65536)])
        assert status == 200 and body["status"] == "decided"
        assert call(port, "GET", "/healthz")[0] == 200


# -- metrics ---------------------------------------------------------------------------------
def test_metrics_count_faces_rungs_outcomes_abstentions_and_cooldowns(client):
    with client(mode="abstain") as c:
        c.post("/v1/decide", json=DECIDE)
        c.post("/v1/judge", json=judge_payload())
        c.post("/v1/decide", json={"question": 1})
        c.post("/v1/systemone", json={"model": "jev-1.13", "state": "x",
                                      "questions": {"q": {"type": "noul", "instructions": "y?"}}})
        text = c.get("/metrics").text
    assert 'system1_requests_total{face="http",outcome="abstained",rung="mock"} 1.0' in text
    assert 'system1_requests_total{face="http",outcome="answered",rung="mock"} 1.0' in text
    assert 'system1_requests_total{face="http",outcome="invalid_request",rung="none"} 1.0' in text
    assert 'system1_requests_total{face="jev",outcome="answered",rung="mock"} 1.0' in text
    assert 'system1_attempts_total{face="http",outcome="ok",rung="mock"} 2.0' in text
    assert 'system1_abstentions_total{face="http",reason="engine",rung="mock"} 2.0' in text
    assert 'system1_attempt_latency_seconds_count{rung="mock"} 3.0' in text
    assert 'system1_request_latency_seconds_count{face="http"} 3.0' in text
    assert 'system1_http_responses_total{route="/v1/decide",status="200"} 1.0' in text
    assert 'system1_http_responses_total{route="/v1/decide",status="422"} 1.0' in text
    assert 'system1_rung_cooling{rung="mock"} 0.0' in text


def test_metrics_show_a_cooling_rung(client):
    with client(mode="fail", failure="rate_limit") as c:
        c.post("/v1/decide", json=DECIDE)
        c.post("/v1/decide", json=DECIDE)
        text = c.get("/metrics").text
    assert 'system1_rung_cooling{rung="mock"} 1.0' in text
    remaining = float(re.search(r'system1_rung_cooldown_remaining_seconds\{rung="mock"\} ([\d.]+)', text).group(1))
    assert 25 < remaining <= 30
    assert 'system1_attempts_total{face="http",outcome="cooling",rung="mock"} 1.0' in text
    assert 'system1_requests_total{face="http",outcome="all_cooling",rung="none"} 1.0' in text


# -- OpenAPI ---------------------------------------------------------------------------------
def _refs(node):
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_openapi_is_generated_from_the_models_and_valid(client):
    with client() as c:
        spec = c.get("/openapi.json").json()
    assert spec["openapi"].startswith("3.1")
    components = spec["components"]["schemas"]
    for model in (JudgeRequest, DecideRequest):  # the request models' own schemas, not hand-written ones
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, definition in schema.pop("$defs", {}).items():
            assert components[name] == definition
        assert components[model.__name__] == schema
    paths = spec["paths"]
    for path, method in (("/v1/judge", "post"), ("/v1/decide", "post"), ("/v1/status", "get"),
                         ("/v1/health", "get"), ("/healthz", "get"), ("/metrics", "get"),
                         ("/v1/systemone", "post"), ("/v1/models", "get")):
        assert method in paths[path], path
    assert "/mcp" not in paths  # a JSON-RPC endpoint, described by MCP itself
    body = paths["/v1/decide"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/DecideRequest"}
    assert paths["/v1/decide"]["post"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/DecideResponse"}
    for ref in _refs(spec):  # every reference resolves
        assert ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in components, ref
    for schema in components.values():  # OpenAPI 3.1 schemas are JSON Schema 2020-12
        jsonschema.Draft202012Validator.check_schema(schema)
    # a real result validates against the published response schema
    with client() as c:
        result = c.post("/v1/decide", json=DECIDE).json()
    registry_schema = {"$ref": "#/components/schemas/DecideResponse", "components": spec["components"]}
    jsonschema.Draft202012Validator(registry_schema).validate(result)


# -- lifecycle -------------------------------------------------------------------------------
def test_stop_is_graceful_and_idle_time_is_tracked(mock_gateway):
    with running(mock_gateway(latency_ms=1500)) as (serving, port):
        wait_ready(port)
        time.sleep(0.2)
        assert serving.idle_s() >= 0.15  # /healthz does not count as activity
        outcome = {}
        worker = threading.Thread(target=lambda: outcome.update(r=call(port, "POST", "/v1/decide", DECIDE)))
        worker.start()
        time.sleep(0.4)
        assert serving.idle_s() == 0.0  # a request is in flight
        serving.stop()  # while the request runs
        worker.join(10)
    status, _, body = outcome["r"]
    assert status == 200 and body["status"] == "decided"


def test_system1_serve_end_to_end_with_sigterm(tmp_path):
    """The CLI: listens on a free port, answers, logs metadata only, exits 0 on SIGTERM."""
    env = {**os.environ, "SYSTEM1_PROVIDER": "mock", "SYSTEM1_LOG_LEVEL": "INFO"}
    proc = subprocess.Popen([sys.executable, "-m", "system1_gateway.cli", "serve", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        lines: list[str] = []
        port = serve_port(proc, lines=lines)
        wait_ready(port)
        secret = "EVIDENCE-7f3a-do-not-log"
        status, _, body = call(port, "POST", "/v1/decide", {"question": f"Is {secret} fine?",
                                                            "context": {"token": secret}, "request_id": "e2e-1"})
        assert status == 200 and body["status"] == "decided"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = "".join(lines) + err
    assert proc.returncode == 0, log
    assert re.search(r"\[e2e-1\] http POST /v1/decide 200 [\d.]+ ms", log), log
    assert secret not in log and body["decision"] not in log.split("listening", 1)[1].replace("decide", "")


# The first decision over HTTP in a fresh home: tests/test_first_call.py, in the home the MCP and
# CLI variants share.


# -- what a connection may cost before it sent a request ---------------------------
def _bounded_gateway(**serve):
    from system1_gateway.config.settings import Config, GatewaySettings, ServeSettings

    return Gateway(Config(gateway=GatewaySettings(provider="mock"), serve=ServeSettings(**serve)))


def _closed_by_server(sock, within_s):
    """True when the server closes `sock` (EOF or reset) within `within_s` seconds."""
    import socket

    sock.settimeout(within_s)
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def _closed_among(socks, within_s):
    """How many of `socks` the server closes within `within_s` seconds (waiting on all at once)."""
    import selectors

    with selectors.DefaultSelector() as watch:
        for sock in socks:
            watch.register(sock, selectors.EVENT_READ)
        closed, end = 0, time.monotonic() + within_s
        while watch.get_map() and (left := end - time.monotonic()) > 0:
            for key, _ in watch.select(left):
                watch.unregister(key.fileobj)
                closed += _closed_by_server(key.fileobj, 0.01)
    return closed


def test_a_request_that_never_finishes_arriving_is_cut_and_a_whole_one_is_not():
    """Half-open connections and headers sent a byte at a time held descriptors for ever (even
    with a key: authentication needs a request). A request must arrive within
    request_read_timeout_s; once it has, the answer may take as long as it needs."""
    import socket

    with running(_bounded_gateway(request_read_timeout_s=1.0)) as (_, port):
        silent = socket.create_connection(("127.0.0.1", port))
        partial = socket.create_connection(("127.0.0.1", port))
        partial.sendall(b"POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 40\r\n\r\n{" % port)
        started = time.monotonic()
        assert _closed_by_server(silent, 10) and _closed_by_server(partial, 10)
        assert time.monotonic() - started < 5
        kept = http.client.HTTPConnection("127.0.0.1", port, timeout=10)  # keep-alive: two requests
        for _ in range(2):
            kept.request("POST", "/v1/decide", body=json.dumps({"question": "Is it?"}),
                         headers={"Content-Type": "application/json"})
            response = kept.getresponse()
            assert response.status == 200 and json.loads(response.read())["status"] == "decided"
            time.sleep(1.2)  # longer than the read timeout, between requests: not a slow request
        kept.close()
        silent.close()
        partial.close()


def test_at_the_cap_the_connection_waiting_longest_is_closed_and_a_new_request_is_served():
    """Past max_connections the process must not run out of descriptors (accept() would fail in
    a loop and the log grow by MBs a second), nor refuse every new connection (a flood of
    half-open ones would lock the owner out): the connection that has waited longest without a
    request is closed to make room."""
    import socket

    with running(_bounded_gateway(max_connections=8, request_read_timeout_s=30)) as (_, port):
        fds_before = len(os.listdir("/proc/self/fd"))
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(8)]
        time.sleep(0.3)  # the server has accepted them
        flood = [socket.create_connection(("127.0.0.1", port)) for _ in range(40)]
        for sock in flood:
            sock.sendall(b"POST /v1/decide HTTP/1.1\r\n")  # half a head, never finished
        oldest, newest = held + flood[:32], flood[32:]
        assert all(_closed_by_server(sock, 5) for sock in oldest)
        assert _closed_among(newest, 0.2) == 0
        for sock in oldest:
            sock.close()
        # this process holds both ends: our 8 clients + the server's 8, nothing for the 40
        assert len(os.listdir("/proc/self/fd")) - fds_before <= 8 * 2 + 4
        # the cap is full of connections waiting for their head: a request still gets in
        status, _, body = call(port, "POST", "/v1/decide", {"question": "Is it?"})
        assert status == 200 and body["status"] == "decided"
        assert _closed_among(newest, 1) == 1  # it made room for itself
        for sock in newest:
            sock.close()


def test_at_the_cap_a_connection_that_presented_the_key_is_never_closed_for_room():
    """Room is made from connections without a key only: the owner's request, whose head
    carried the token, keeps its place however many connections arrive after it."""
    import socket

    token = "k" * 43
    with running(_bounded_gateway(max_connections=8, request_read_timeout_s=30), token=token) as (_, port):
        owner = socket.create_connection(("127.0.0.1", port))
        body = json.dumps({"question": "Is it?"}).encode()
        owner.sendall(b"POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                      b"Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                      % (port, token.encode(), len(body)) + body[:1])  # the head, and the body to come
        time.sleep(0.3)
        stranger = socket.create_connection(("127.0.0.1", port))  # a whole head, a wrong key
        stranger.sendall(b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n\r\n"
                         % (port, b"x" * 43))
        flood = [socket.create_connection(("127.0.0.1", port)) for _ in range(30)]
        assert all(_closed_by_server(sock, 5) for sock in flood[:20])
        assert _closed_by_server(stranger, 5)  # (answered 401) a place to make room with
        owner.sendall(body[1:])
        owner.settimeout(10)
        reply = b""
        while chunk := owner.recv(65536):
            reply += chunk
        assert reply.startswith(b"HTTP/1.1 200 ") and b'"decided"' in reply, reply[:300]
        for sock in (owner, stranger, *flood):
            sock.close()


def test_a_repeated_accept_error_is_logged_once_a_minute():
    """asyncio logs each failed accept(); out of descriptors that was hundreds a second."""
    import logging

    from system1_gateway.http.connections import Quiet

    quiet = Quiet()
    record = logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "socket.accept() out of system resource",
                               None, None)
    other = logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "another problem", None, None)
    assert [quiet.filter(record) for _ in range(500)].count(True) == 1
    assert quiet.filter(other) is True


def test_a_refused_request_does_not_keep_the_daemon_awake(mock_gateway):
    """Another local user's requests (401 without the token) are not activity: otherwise they
    could keep the daemon, and its model, from ever idling out."""
    token = "t" * 43
    with TestClient(create_app(mock_gateway(), token=token)) as c:
        activity = c.app.state.activity
        before = activity.last_end
        assert c.post("/v1/decide", json={"question": "Is it?"}).status_code == 401
        assert activity.last_end == before and activity.in_flight == 0
        ok = c.post("/v1/decide", json={"question": "Is it?"}, headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200 and activity.last_end > before


def test_a_warm_server_freezes_what_start_up_built(mock_gateway):
    """Once the first rung is warm the server moves start-up objects out of the collector's
    generations (core.freeze_heap): a full collection over them (≈ 100 000 objects with the
    embedded engine, 76–113 ms here) would otherwise land on whichever request triggered it."""
    import gc
    import time

    gc.unfreeze()
    with TestClient(create_app(mock_gateway())) as c:
        end = time.monotonic() + 30
        while c.get("/healthz").json().get("status") != "ok" and time.monotonic() < end:
            time.sleep(0.05)
        end = time.monotonic() + 30
        while gc.get_freeze_count() == 0 and time.monotonic() < end:
            time.sleep(0.05)
        assert gc.get_freeze_count() > 1000
    gc.unfreeze()
