"""The Jev wire face (http/jev_wire.py): translation functions, and the router on a minimal FastAPI
app through TestClient, against the real gateway core with mock rungs.

Real Jev clients against a running `system1 serve` are in test_jev_clients.py.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
import zstandard
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from system1_gateway.core.gateway import Gateway
from system1_gateway.http import jev_wire
from system1_gateway.model.requests import JudgeRequest

QUESTIONS = {
    "billing": {"type": "noul", "instructions": "Is this about billing?",
                "criteria": {"true": "payments, invoices", "false": "anything else"}},
    "team": {"type": "choice", "instructions": "Which team?", "criteria": {"billing": "payments", "tech": None}},
    "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["can wait", "this week", "today"]},
}


def jev_body(**overrides):
    return {"model": "jev-latest", "state": "I was charged twice. Please help.", "questions": QUESTIONS, **overrides}


def make_client(gateway: Gateway) -> TestClient:
    app = FastAPI()
    app.include_router(jev_wire.router)
    app.state.gateway = gateway
    return TestClient(app)


@pytest.fixture
def client(mock_gateway):
    gateway = mock_gateway()
    with make_client(gateway) as c:
        yield c
    gateway.close()


@pytest.fixture
def chain_client(write_config):
    """A waterfall whose first rung always fails (transport) and whose second answers."""
    def make(failure: str = "transport", second: bool = True):
        write_config(f"""
[gateway]
provider = "broken"
fallback = {'["backup"]' if second else '[]'}
[providers.broken]
kind = "mock"
mode = "fail"
failure = "{failure}"
[providers.backup]
kind = "mock"
model = "backup-7"
""")
        return make_client(Gateway.from_environment())
    return make


def assert_detail(resp, status: int, loc: list, fragment: str):
    assert resp.status_code == status, resp.text
    details = resp.json()["detail"]
    assert any(d["loc"] == loc and fragment in d["msg"] for d in details), details
    jev_wire.JevValidationError.model_validate(resp.json())


# -- translation: request -------------------------------------------------------------------
def test_to_judge_every_type_and_the_waterfall_aliases():
    for alias in jev_wire.WATERFALL_MODELS:
        request, provider = jev_wire.to_judge(jev_body(model=alias), ["mock"])
        assert provider is None
    assert isinstance(request, JudgeRequest)
    assert [q.type for q in request.questions.values()] == ["noul", "choice", "score"]
    assert request.questions["team"].labels == ["billing", "tech"]
    assert request.questions["urgency"].labels == ["0", "1", "2"]
    assert "model" not in request.model_dump()


def test_to_judge_a_rung_name_picks_only_that_rung():
    _, provider = jev_wire.to_judge(jev_body(model="backup"), ["broken", "backup"])
    assert provider == "backup"


def test_to_judge_unknown_model_names_the_field_and_the_accepted_names():
    with pytest.raises(jev_wire.WireError) as err:
        jev_wire.to_judge(jev_body(model="gpt-9"), ["mock"])
    assert err.value.status == 422
    (detail,) = err.value.body["detail"]
    assert detail["loc"] == ["body", "model"]
    assert "jev-latest" in detail["msg"] and "mock" in detail["msg"]


def test_to_judge_structured_text_and_non_string_state_pass_through():
    body = jev_body(state=[{"from": "ana", "text": "charged twice"}, {"from": "bo", "text": "refund?"}],
                    questions={"q": {"type": "score", "instructions": {"task": "rate", "scale": [0, 1, 2]},
                                     "criteria": [{"level": "low"}, ["medium", "ish"], "high"]}})
    request, _ = jev_wire.to_judge(body, [])
    assert request.state == body["state"]
    assert request.questions["q"].instructions == {"task": "rate", "scale": [0, 1, 2]}
    assert request.questions["q"].criteria == [{"level": "low"}, ["medium", "ish"], "high"]


# -- translation: response ------------------------------------------------------------------
def test_jev_confidence_formulas():
    assert jev_wire.choice_confidence([0.5, 0.5]) == 0.0
    assert jev_wire.choice_confidence([1.0, 0.0, 0.0]) == 1.0
    assert jev_wire.choice_confidence([0.93, 0.07]) == pytest.approx(0.86)
    assert jev_wire.choice_confidence([1.0]) == 1.0
    assert jev_wire.score_confidence([1 / 3, 1 / 3, 1 / 3]) == 0.0
    assert jev_wire.score_confidence([0.0, 0.0, 1.0]) == 1.0
    # mode 2; spread 0.15·2 + 0.3·1 = 0.6; uniform spread (2 + 1 + 0)/3 = 1
    assert jev_wire.score_confidence([0.15, 0.3, 0.55]) == pytest.approx(0.4)
    # mass beside the mode costs less than mass far from it
    assert jev_wire.score_confidence([0.0, 0.2, 0.8]) > jev_wire.score_confidence([0.2, 0.0, 0.8])


def _result(answers, usage=None, provider="mock", model="mock-1"):
    return {"request_id": "r-1", "status": "answered", "answers": answers, "order": [provider],
            "provider": provider, "model": model, "usage": usage or {"input_tokens": None, "output_tokens": None},
            "error": None}


def test_to_jev_shapes_refusal_usage_and_headers():
    request, _ = jev_wire.to_judge(jev_body(), [])
    answers = {
        "billing": {"type": "noul", "p_true": 0.97, "probabilities": {"true": 0.97, "false": 0.03},
                    "confidence": 0.97, "abstained": False, "calibrated": False},
        "team": {"type": "refusal", "question_type": "choice", "abstained": True, "abstain_reason": "refused",
                 "calibrated": False, "rationale": "no"},
        "urgency": {"type": "score", "score": 1.4, "level": 2, "probabilities": {"0": 0.15, "1": 0.3, "2": 0.55},
                    "confidence": 0.55, "abstained": True, "abstain_reason": "below_threshold", "calibrated": False},
    }
    body, headers = jev_wire.to_jev(_result(answers, {"input_tokens": 120, "output_tokens": None}), request)
    jev_wire.JevResponse.model_validate(body)
    assert body["model"] == "mock/mock-1"
    assert body["answers"]["billing"] == {"type": "noul", "noul": 0.97}
    assert "team" not in body["answers"]  # never a faked value for a refusal
    assert body["answers"]["urgency"]["legend"] == {"0": "can wait", "1": "this week", "2": "today"}
    assert body["answers"]["urgency"]["confidence"] == pytest.approx(0.4)
    assert body["usage"] == {"input_tokens": 120, "output_tokens": None}  # unknown stays null
    assert headers["x-system1-refused"] == "1" and headers["x-system1-abstained"] == "1"
    assert headers["x-typesafe-request-id"] == "r-1"


def test_failure_status_maps_every_error_code(mock_gateway):
    gateway = mock_gateway()
    expected = {"invalid_request": 422, "config_error": 500, "internal_error": 500, "provider_error": 502,
                "malformed_response": 502, "provider_timeout": 504, "deadline_exceeded": 504,
                "all_cooling": 503}
    for code, status in expected.items():
        result = {**_result({}), "status": "error", "error": {"code": code, "message": f"{code} happened"}}
        got, body, headers = jev_wire.failure_status(result, gateway)
        assert got == status, code
        assert headers["x-typesafe-request-id"] == "r-1"
        if status == 422:
            jev_wire.JevValidationError.model_validate(body)
        else:
            assert body == {"detail": {"message": f"{code} happened", "code": code}}
    gateway.close()


# -- the router -----------------------------------------------------------------------------
def test_router_answers_every_type(client):
    resp = client.post("/v1/systemone", json=jev_body())
    assert resp.status_code == 200, resp.text
    body = jev_wire.JevResponse.model_validate(resp.json())
    assert body.model == "mock/mock-1"
    assert set(body.answers) == {"billing", "team", "urgency"}
    team = resp.json()["answers"]["team"]
    assert team["choice"] in ("billing", "tech") and sum(team["probabilities"].values()) == pytest.approx(1)
    assert team["confidence"] == pytest.approx(jev_wire.choice_confidence(list(team["probabilities"].values())))
    urgency = resp.json()["answers"]["urgency"]
    assert set(urgency["probabilities"]) == {"0", "1", "2"}
    assert urgency["score"] == pytest.approx(sum(int(k) * p for k, p in urgency["probabilities"].items()), abs=1e-3)
    assert resp.headers["x-system1-provider"] == "mock"
    assert len(resp.headers["x-typesafe-request-id"]) == 32


def test_router_structured_state_and_texts(client):
    resp = client.post("/v1/systemone", json=jev_body(
        state={"subject": "Duplicate charge", "messages": ["charged twice", "please help"]},
        questions={"q": {"type": "score", "instructions": {"task": "rate urgency"},
                         "criteria": [{"level": "low"}, ["medium"], "high"]}}))
    assert resp.status_code == 200, resp.text
    assert resp.json()["answers"]["q"]["legend"] == {"0": {"level": "low"}, "1": ["medium"], "2": "high"}


def test_router_request_id_extension_is_a_safe_header(client):
    resp = client.post("/v1/systemone", json=jev_body(request_id="café ✓ 1"))
    assert resp.status_code == 200
    assert resp.headers["x-typesafe-request-id"] == "caf%C3%A9 %E2%9C%93 1"


def test_models_lists_the_aliases_then_the_rungs(chain_client):
    with chain_client() as c:
        resp = c.get("/v1/models")
    assert resp.status_code == 200
    names = [m.name for m in jev_wire.JevModelList.model_validate(resp.json()).models]
    assert names == [*jev_wire.WATERFALL_MODELS, "broken", "backup"]
    assert "broken → backup" in resp.json()["models"][0]["description"]


def test_waterfall_fallback_answers_a_jev_client(chain_client):
    with chain_client() as c:
        resp = c.post("/v1/systemone", json=jev_body())
    assert resp.status_code == 200, resp.text
    assert resp.json()["model"] == "backup/backup-7"
    assert resp.headers["x-system1-provider"] == "backup"


def test_model_naming_a_rung_runs_only_that_rung(chain_client):
    with chain_client() as c:
        only_backup = c.post("/v1/systemone", json=jev_body(model="backup"))
        only_broken = c.post("/v1/systemone", json=jev_body(model="broken"))
    assert only_backup.status_code == 200 and only_backup.json()["model"] == "backup/backup-7"
    assert only_broken.status_code == 502
    assert only_broken.json()["detail"]["code"] == "provider_error"


def test_every_rung_cooling_on_rate_limits_is_429_with_retry_after(chain_client):
    with chain_client("rate_limit", second=False) as c:
        first = c.post("/v1/systemone", json=jev_body())
        second = c.post("/v1/systemone", json=jev_body())
    assert first.status_code == 502  # the failure itself; now the rung cools 30 s
    assert second.status_code == 429, second.text
    assert second.json()["detail"]["code"] == "all_cooling"
    assert 1 <= int(second.headers["retry-after"]) <= 30
    assert 0 < int(second.headers["retry-after-ms"]) <= 30_000
    jev_wire.JevFailure.model_validate(second.json())


def test_every_rung_cooling_for_other_reasons_is_503_with_retry_after(chain_client):
    with chain_client("credentials", second=False) as c:
        c.post("/v1/systemone", json=jev_body())
        resp = c.post("/v1/systemone", json=jev_body())
    assert resp.status_code == 503, resp.text
    assert 200 < int(resp.headers["retry-after"]) <= 300
    assert "cooling" in resp.json()["detail"]["message"]


def test_engine_timeout_is_504(mock_gateway):
    with make_client(mock_gateway(mode="timeout")) as c:
        resp = c.post("/v1/systemone", json=jev_body(deadline_s=0.3))
    assert resp.status_code == 504, resp.text
    assert resp.json()["detail"]["code"] in ("provider_timeout", "deadline_exceeded")


def test_broken_config_is_500_and_models_still_answers(write_config):
    write_config("[gateway]\nprovider = 'nosuchkind'\n")
    with make_client(Gateway.from_environment()) as c:
        resp = c.post("/v1/systemone", json=jev_body())
        models = c.get("/v1/models")
    assert resp.status_code == 500 and resp.json()["detail"]["code"] == "config_error"
    assert [m["name"] for m in models.json()["models"]] == list(jev_wire.WATERFALL_MODELS)


# -- bad bodies: 4xx naming the problem, never 5xx -----------------------------------------
def test_not_json_is_400(client):
    resp = client.post("/v1/systemone", content=b"{not json", headers={"content-type": "application/json"})
    assert_detail(resp, 400, ["body"], "not valid JSON")


def test_empty_and_non_utf8_bodies_are_400(client):
    assert_detail(client.post("/v1/systemone", content=b""), 400, ["body"], "empty")
    assert_detail(client.post("/v1/systemone", content=b'{"state": "\xff\xfe"}'), 400, ["body"], "not valid JSON")


def test_a_json_array_is_422(client):
    assert_detail(client.post("/v1/systemone", json=[jev_body()]), 422, ["body"], "expected a JSON object")


@pytest.mark.parametrize("change, loc, fragment", [
    ({"questions": "all of them"}, ["body", "questions"], "valid dictionary"),
    ({"questions": {}}, ["body", "questions"], "at least 1 item"),
    ({"state": 42}, ["body", "state"], "a string, an object or an array"),
    ({"model": 7}, ["body", "model"], "valid string"),
    ({"questions": {"u": {"type": "score", "criteria": ["only one"]}}}, ["body", "questions", "u", "score", "criteria"],
     "at least 2"),
    ({"questions": {"u": {"type": "rank", "criteria": ["a", "b"]}}}, ["body", "questions", "u"], "'rank'"),
    ({"questions": {"c": {"type": "choice", "criteria": {"a": None, "b": None}, "extra": 1}}},
     ["body", "questions", "c", "choice", "extra"], "unknown field"),
    ({"foo": 1}, ["body", "foo"], "unknown field"),
    ({"deadline_s": 10**300}, ["body", "deadline_s"], "600"),
    ({"min_confidence": -1e308}, ["body", "min_confidence"], "greater than or equal to 0"),
    ({"state": "\ud800"}, ["body"], "lone surrogate"),
])
def test_invalid_requests_are_422_naming_the_field(client, change, loc, fragment):
    body = jev_body(**change)
    assert_detail(client.post("/v1/systemone", content=json.dumps(body).encode()), 422, loc, fragment)


def test_missing_model_is_422(client):
    body = jev_body()
    del body["model"]
    assert_detail(client.post("/v1/systemone", json=body), 422, ["body", "model"], "required")


def test_numbers_past_float_range_and_digit_limit_are_400(client):
    text = json.dumps(jev_body(deadline_s=1)).replace('"deadline_s": 1', '"deadline_s": 1e400')
    assert_detail(client.post("/v1/systemone", content=text.encode()), 400, ["body"], "out of range")
    text = json.dumps(jev_body(deadline_s=1)).replace('"deadline_s": 1', '"deadline_s": ' + "9" * 5000)
    assert_detail(client.post("/v1/systemone", content=text.encode()), 400, ["body"], "not valid JSON")
    text = json.dumps(jev_body(deadline_s=1)).replace('"deadline_s": 1', '"deadline_s": NaN')
    assert_detail(client.post("/v1/systemone", content=text.encode()), 400, ["body"], "NaN")


def test_deep_nesting_is_refused(client):
    assert_detail(client.post("/v1/systemone", content=b"[" * 200_000), 400, ["body"], "")
    nested = json.dumps(jev_body(state={"a": json.loads("[" * 60 + "]" * 60)}))
    assert_detail(client.post("/v1/systemone", content=nested.encode()), 422, ["body"], "nested deeper")


def test_many_errors_are_capped(client):
    questions = {f"q{i}": {"type": "score", "criteria": ["one"]} for i in range(50)}
    resp = client.post("/v1/systemone", json=jev_body(questions=questions))
    assert resp.status_code == 422
    details = resp.json()["detail"]
    assert len(details) == jev_wire.MAX_DETAIL_ENTRIES + 1 and details[-1]["msg"] == "and 30 more errors"


def test_images_are_refused_clearly(client):
    assert_detail(client.post("/v1/systemone", json=jev_body(assets={"a": {"type": "image", "part": "asset-0"}})),
                  422, ["body", "assets"], "images are not supported")
    assert_detail(client.post("/v1/systemone", json=jev_body(questions={"b": {"type": "box", "instructions": "cat"}})),
                  422, ["body", "questions", "b", "type"], "not supported")
    multipart = client.post("/v1/systemone", files={"request": ("request", json.dumps(jev_body()), "application/json"),
                                                    "asset-0": ("a.png", b"\x89PNG\r\n\x1a\n", "image/png")})
    assert_detail(multipart, 415, ["body"], "images are not supported by this gateway")


def test_other_media_types_and_encodings_are_415(client):
    body = json.dumps(jev_body()).encode()
    assert_detail(client.post("/v1/systemone", content=body, headers={"content-type": "text/plain"}),
                  415, ["body"], "application/json")
    assert_detail(client.post("/v1/systemone", content=body, headers={"content-encoding": "br"}),
                  415, ["body"], "'br' is not supported")


def test_oversized_body_is_413(client):
    big = json.dumps(jev_body(state="x" * (jev_wire.MAX_BODY_BYTES + 10))).encode()
    assert_detail(client.post("/v1/systemone", content=big), 413, ["body"], "exceeds")


# -- zstd -----------------------------------------------------------------------------------
def zstd_post(client, payload: bytes):
    return client.post("/v1/systemone", content=zstandard.ZstdCompressor().compress(payload),
                       headers={"content-type": "application/json", "content-encoding": "zstd"})


def test_zstd_body_is_decoded(client):
    body = jev_body(state="I was charged twice. " * 100)  # over 1 KiB, as the SDK compresses
    resp = zstd_post(client, json.dumps(body).encode())
    assert resp.status_code == 200, resp.text
    assert set(resp.json()["answers"]) == {"billing", "team", "urgency"}


def test_zstd_garbage_and_bomb_are_4xx(client):
    garbage = client.post("/v1/systemone", content=b"\x28\xb5\x2f\xfd garbage",
                          headers={"content-encoding": "zstd"})
    assert_detail(garbage, 400, ["body"], "not valid zstd")
    bomb = zstd_post(client, b" " * (4 * jev_wire.MAX_BODY_BYTES))
    assert_detail(bomb, 413, ["body"], "once decompressed")


def test_zstd_without_a_decoder_is_415(client, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_zstd(name, *args, **kwargs):
        if name in ("zstandard", "compression.zstd", "backports.zstd"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_zstd)
    monkeypatch.setattr(jev_wire.importlib, "import_module", lambda name: no_zstd(name))
    resp = zstd_post(client, json.dumps(jev_body()).encode())
    assert_detail(resp, 415, ["body"], "no zstd decoder")


# -- OpenAPI and fuzz -----------------------------------------------------------------------
def test_openapi_documents_a_self_contained_request_schema(client):
    spec = client.app.openapi()
    post = spec["paths"]["/v1/systemone"]["post"]
    schema = post["requestBody"]["content"]["application/json"]["schema"]
    assert "$defs" not in json.dumps(schema) and "discriminator" not in json.dumps(schema)
    jsonschema.validate(jev_body(), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(jev_body(questions={}), schema)
    assert {"200", "400", "413", "415", "422", "429", "502", "503", "504"} <= set(post["responses"])
    assert "/v1/models" in spec["paths"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)
question = st.fixed_dictionaries({"type": st.sampled_from(["noul", "choice", "score", "box", "bool", "x"])},
                                 optional={"instructions": json_values, "criteria": json_values, "extra": json_values})
bodies = (json_values
          | st.fixed_dictionaries({"model": st.sampled_from(["jev-latest", "mock", "nope"]) | json_values},
                                  optional={"state": json_values, "deadline_s": json_values,
                                            "questions": st.dictionaries(st.text(max_size=4), question, max_size=3)}))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies)
def test_generated_bodies_never_get_a_5xx(client, body):
    resp = client.post("/v1/systemone", content=json.dumps(body).encode())
    assert resp.status_code in (200, 400, 422), resp.text
    if resp.status_code == 200:
        jev_wire.JevResponse.model_validate(resp.json())
    else:
        jev_wire.JevValidationError.model_validate(resp.json())


def test_the_serve_app_includes_the_jev_wire(mock_gateway):
    from system1_gateway.http.app import create_app

    gateway = mock_gateway()
    with TestClient(create_app(gateway)) as c:
        resp = c.post("/v1/systemone", json=jev_body())
        models = c.get("/v1/models")
        metrics = c.get("/metrics").text
    gateway.close()
    assert resp.status_code == 200 and jev_wire.JevResponse.model_validate(resp.json())
    assert models.status_code == 200 and models.json()["models"][0]["name"] == "jev-latest"
    assert 'face="jev"' in metrics


def test_a_translation_bug_is_a_500_internal_error_not_a_crash(client, monkeypatch):
    def broken(result, request):
        raise KeyError("probabilities")

    monkeypatch.setattr(jev_wire, "to_jev", broken)
    resp = client.post("/v1/systemone", json=jev_body())
    assert resp.status_code == 500
    assert resp.json()["detail"]["code"] == "internal_error" and "KeyError" in resp.json()["detail"]["message"]
