"""Fuzz the HTTP API from its own OpenAPI with schemathesis: every operation, valid and
invalid inputs, plus every undeclared method on every path, against a real server.

What must hold for every case: no 5xx; a response the OpenAPI declares (status, content type,
body schema); every error a JSON body naming the problem; and the server still healthy after.
The run generates ≥ 1 500 cases (counted); `benchmarks/http_load.py --fuzz N` runs more.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from helpers.serve import call, running, wait_ready

# Per operation with inputs (the three POST routes); an operation without inputs has one case.
# Sized to what they find (counted 2026-12-04, per operation and mode, the case at which the last
# new kind of answer — status and error code — first appeared): valid inputs by case 67, invalid
# ones by case 207. Generating a case costs ≈ 17 ms (schemathesis/hypothesis), so 360 valid
# cases per operation were ≈ 10 s of generation finding nothing new after the 67th; 180 keep
# more than twice the margin. `benchmarks/http_load.py --fuzz N` runs any number.
CASES_PER_OPERATION = {GenerationMode.POSITIVE: 180, GenerationMode.NEGATIVE: 330}
# A deadline no engine can meet is the caller's choice: its 504 is the documented mapping of the
# gateway's timeout result, not a server failure (every other 5xx fails the run).
UNMEETABLE_DEADLINE_S = 0.05
MIN_CASES = 1500  # 3 operations × (180 + 330) + 5 without inputs = 1535
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
CHECKS = [status_code_conformance, content_type_conformance, response_schema_conformance]
TIMEOUT_CODES = {"provider_timeout", "deadline_exceeded"}


def unstartable_override(case: Any, response: Any) -> bool:
    """A 502 `provider_error` for a request whose own `?provider=` / `?chain=` named only rungs
    that cannot start here (e.g. `openai`: no billing consent, no key): every attempt was
    skipped, never called, and the body says why. That is the documented answer to such a
    request, not a server failure."""
    query = case.query or {}
    if response.status_code != 502 or not (query.get("provider") or query.get("chain")):
        return False
    body = response.json() or {}
    attempts = body.get("attempts") or []
    return ((body.get("error") or {}).get("code") == "provider_error" and bool(attempts)
            and all(a.get("outcome") == "skipped" and a.get("detail") for a in attempts))


def check_no_server_failure(case: Any, response: Any, timeouts: list[float]) -> None:
    """schemathesis's not_a_server_error, except a 504 timeout result for a request whose own
    `deadline_s` was below UNMEETABLE_DEADLINE_S (recorded, and shown by the test), and a 502
    for a request that named rungs that cannot start here (`unstartable_override`)."""
    if unstartable_override(case, response):
        timeouts.append(0.0)  # counted with the expected non-answers, shown by the test
        return None
    if response.status_code != 504 or not isinstance(case.body, dict):
        return not_a_server_error_for(case, response)
    deadline = case.body.get("deadline_s")
    code = ((response.json() or {}).get("error") or {}).get("code")
    if isinstance(deadline, (int, float)) and 0 < deadline < UNMEETABLE_DEADLINE_S and code in TIMEOUT_CODES:
        timeouts.append(deadline)
        return None
    return not_a_server_error_for(case, response)


def not_a_server_error_for(case: Any, response: Any) -> None:
    case.validate_response(response, checks=[not_a_server_error])


def names_the_problem(body: Any) -> bool:
    """An error body that says what was wrong: `error.message` (the gateway's results and
    the HTTP-level errors) or the Jev wire's `detail` / `error` forms."""
    if not isinstance(body, dict):
        return False
    error, detail = body.get("error"), body.get("detail")
    if isinstance(error, dict) and isinstance(error.get("message"), str) and error["message"].strip():
        return True
    if isinstance(error, str) and error.strip():
        return True
    if isinstance(detail, str) and detail.strip():
        return True
    return isinstance(detail, list) and bool(detail) and all(isinstance(d, dict) and d.get("msg") for d in detail)


def check_error_body(response: Any, what: str) -> None:
    """For a requests or a schemathesis response (whose header values are lists)."""
    if response.status_code < 400:
        return
    content_type = response.headers.get("content-type", "")
    content_type = content_type[0] if isinstance(content_type, list) else content_type
    assert content_type.startswith("application/json"), f"{what}: {content_type}"
    assert names_the_problem(response.json()), f"{what}: error body names no problem: {response.text[:500]}"


@pytest.fixture(scope="module")
def server():
    import os

    from system1_gateway.core.gateway import Gateway

    saved = {k: os.environ.get(k) for k in ("SYSTEM1_PROVIDER",)}
    os.environ["SYSTEM1_PROVIDER"] = "mock"  # module scope: the autouse fixture's env is per test
    try:
        gateway = Gateway.from_environment()
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
    with running(gateway) as (_, port):
        wait_ready(port)
        yield port
    gateway.close()


def fuzz(base: str, cases_per_mode: dict) -> tuple[dict[str, int], list[float], float]:
    """Every operation of the server's OpenAPI, positive then negative cases; raises on the
    first failing case. Returns (cases per operation, unmeetable deadlines seen, seconds)."""
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    session = requests.Session()
    session.trust_env = False  # loopback only, never a proxy from the environment
    counted: dict[str, int] = {}
    timeouts: list[float] = []
    started = time.perf_counter()
    for operation in [result.ok() for result in schema.get_all_operations()]:
        for mode, examples in cases_per_mode.items():
            if mode is GenerationMode.NEGATIVE and not _has_inputs(operation):
                continue  # nothing to make invalid

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                      phases=[Phase.generate], suppress_health_check=list(HealthCheck))
            def run(case):
                response = case.call(base_url=base, session=session, timeout=30)
                counted[operation.label] = counted.get(operation.label, 0) + 1
                check_no_server_failure(case, response, timeouts)
                case.validate_response(response, checks=CHECKS)
                check_error_body(response, f"{operation.label} ({mode})")

            run()
    return counted, timeouts, time.perf_counter() - started


def test_fuzz_every_operation_from_the_openapi(server):
    counted, timeouts, elapsed = fuzz(f"http://127.0.0.1:{server}", CASES_PER_OPERATION)
    total = sum(counted.values())
    print(f"\nschemathesis: {total} cases in {elapsed:.1f} s: {counted}; "
          f"{sum(1 for t in timeouts if t > 0)} timeout results for deadlines under {UNMEETABLE_DEADLINE_S} s, "
          f"{sum(1 for t in timeouts if t == 0)} 502s for overrides naming unstartable rungs")
    assert set(counted) >= {"POST /v1/judge", "POST /v1/decide", "GET /v1/status", "GET /v1/health",
                            "GET /healthz", "GET /metrics", "POST /v1/systemone", "GET /v1/models"}
    assert total >= MIN_CASES, counted
    status, _, body = call(server, "GET", "/healthz")
    assert status == 200 and body["status"] == "ok"
    status, _, body = call(server, "POST", "/v1/decide", {"question": "Still answering?"})
    assert status == 200 and body["status"] == "decided"


def _has_inputs(operation) -> bool:
    return bool(operation.body) or any(True for _ in operation.iter_parameters())


def test_every_undeclared_method_is_a_json_405(server):
    base = f"http://127.0.0.1:{server}"
    spec = requests.get(f"{base}/openapi.json", timeout=30).json()
    tried = 0
    for path, declared in spec["paths"].items():
        for method in METHODS:
            if method.lower() in declared:
                continue
            response = requests.request(method, base + path, json={"x": 1}, timeout=30)
            tried += 1
            assert response.status_code == 405, (method, path, response.status_code)
            check_error_body(response, f"{method} {path}")
    assert tried >= 20


def test_an_override_naming_a_rung_that_cannot_start_is_an_honest_502(server):
    """The case the fuzzer once found: `?provider=openai` without a billing consent. The rung is
    skipped, never called; the 502 names why; the fuzz check accepts exactly this."""
    from types import SimpleNamespace

    for query in ("provider=openai", "chain=openai"):
        response = requests.post(f"http://127.0.0.1:{server}/v1/decide?{query}", json={"question": "x?"}, timeout=30)
        body = response.json()
        assert response.status_code == 502 and body["error"]["code"] == "provider_error"
        assert [a["outcome"] for a in body["attempts"]] == ["skipped"] and "billing consent" in body["attempts"][0]["detail"]
        case = SimpleNamespace(query=dict([query.split("=")]))
        assert unstartable_override(case, response)
    ok = requests.post(f"http://127.0.0.1:{server}/v1/decide", json={"question": "x?"}, timeout=30)
    assert ok.status_code == 200 and not unstartable_override(SimpleNamespace(query={}), ok)
