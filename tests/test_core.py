"""Gateway core with the mock provider: answer checks, confidence, abstention, attempts, audit."""

import json

import pytest

from conftest import judge_payload
from system1_gateway.core.audit import audit_path
from system1_gateway.model.results import decide_response_adapter, judge_result_adapter
from system1_gateway.providers.mock import MALFORMED_KINDS

THREE = {
    "n": {"type": "yesno", "instructions": "Is it a build problem?"},
    "c": {"type": "choice", "instructions": "Which team?", "criteria": {"build": "CI", "docs": None, "ui": "front"}},
    "s": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "mid", "high"]},
}


def test_answers_every_type_in_the_pinned_shape(mock_gateway):
    result = mock_gateway().judge(judge_payload(**THREE) | {"request_id": "r-1"})
    judge_result_adapter.validate_python(result)
    assert result["status"] == "answered" and result["request_id"] == "r-1"
    assert result["provider"] == "mock" and result["model"] == "mock-1" and result["order"] == ["mock"]
    n, c, s = (result["answers"][k] for k in "ncs")
    assert n["type"] == "noul" and n["probabilities"] == {"true": n["p_true"], "false": pytest.approx(1 - n["p_true"])}
    assert c["choice"] in ("build", "docs", "ui") and c["confidence"] == max(c["probabilities"].values())
    assert s["level"] == max(range(3), key=lambda i: s["probabilities"][str(i)])
    assert s["score"] == pytest.approx(sum(i * s["probabilities"][str(i)] for i in range(3)), abs=1e-3)
    assert all(a["calibrated"] is False and a["abstained"] is False for a in result["answers"].values())
    assert [a["outcome"] for a in result["attempts"]] == ["ok"]
    assert result["usage"] == {"input_tokens": None, "output_tokens": None}


def test_answers_are_deterministic(mock_gateway):
    gateway = mock_gateway()
    first = gateway.judge(judge_payload(**THREE))["answers"]
    assert gateway.judge(judge_payload(**THREE))["answers"] == first


def test_below_threshold_abstains_but_keeps_the_answer(mock_gateway):
    result = mock_gateway(confidence=0.55).judge(judge_payload(**THREE))
    for answer in result["answers"].values():
        assert answer["abstained"] and answer["abstain_reason"] == "below_threshold"
        assert answer["probabilities"]
    assert "choice" in result["answers"]["c"]


def test_per_request_threshold_overrides_config(mock_gateway):
    gateway = mock_gateway(confidence=0.55)
    result = gateway.judge(judge_payload(**THREE) | {"min_confidence": 0.5})
    assert not any(a["abstained"] for a in result["answers"].values())
    strict = mock_gateway(confidence=0.9).judge(judge_payload(**THREE) | {"min_confidence": 0.95})
    assert all(a["abstained"] for a in strict["answers"].values())


def test_configured_threshold(mock_gateway, monkeypatch):
    monkeypatch.setenv("SYSTEM1_MIN_CONFIDENCE", "0.95")
    assert all(a["abstained"] for a in mock_gateway().judge(judge_payload(**THREE))["answers"].values())


def test_engine_abstention_is_kept(mock_gateway):
    result = mock_gateway(mode="abstain").judge(judge_payload(**THREE))
    assert result["status"] == "answered"
    assert all(a["abstain_reason"] == "engine" for a in result["answers"].values())


def test_decide_decided_abstained_and_error(mock_gateway):
    decided = mock_gateway(answer="yes").decide({"question": "Is rm -rf destructive?", "request_id": "d1"})
    decide_response_adapter.validate_python(decided)
    assert decided["status"] == "decided" and decided["decision"] == "yes" and decided["request_id"] == "d1"
    assert decided["probabilities"] == {"yes": 0.9, "no": pytest.approx(0.1)}
    abstained = mock_gateway(confidence=0.5).decide({"question": "Pick", "options": ["a", "b", "c"]})
    assert abstained["status"] == "abstained" and abstained["decision"] is None and abstained["probabilities"]
    failed = mock_gateway(mode="fail").decide({"question": "Pick"})
    decide_response_adapter.validate_python(failed)
    assert failed["status"] == "error" and failed["error"]["code"] == "provider_error"
    invalid = mock_gateway().decide({"question": "Pick", "options": ["a"]})
    assert invalid["error"]["code"] == "invalid_request" and invalid["attempts"] == []


EXPECTED_MALFORMED = {
    "not_object": "answer is not an object",
    "missing": "missing",
    "wrong_type": "answer type",
    "sum": "sum to",
    "negative": "negative probability",
    "not_argmax": "is not the most probable label",
    "unknown_label": "is not one of the labels",
    "confidence_range": "engine_confidence",
    "p_true_range": "outside [0, 1]",
}


@pytest.mark.parametrize("kind", MALFORMED_KINDS)
def test_malformed_answers_are_rejected_by_the_gateway(mock_gateway, kind):
    # `c` first: a choice question exposes every malformation class.
    payload = judge_payload(c=THREE["c"], n=THREE["n"]) if kind != "p_true_range" else judge_payload(n=THREE["n"])
    result = mock_gateway(mode="malformed", malformed=kind).judge(payload)
    judge_result_adapter.validate_python(result)
    assert result["status"] == "error" and result["answers"] == {}
    assert result["error"]["code"] == "malformed_response"
    assert EXPECTED_MALFORMED[kind] in result["error"]["message"]
    assert result["attempts"][0]["outcome"] == "malformed"


def test_timeout_retries_once_on_a_single_rung_then_fails(mock_gateway, monkeypatch):
    monkeypatch.setenv("SYSTEM1_TIMEOUT_S", "0.1")
    monkeypatch.setenv("SYSTEM1_DEADLINE_S", "1")
    result = mock_gateway(mode="timeout").judge(judge_payload())
    assert result["error"]["code"] == "provider_timeout"
    assert [a["outcome"] for a in result["attempts"]] == ["timeout", "timeout"]
    assert result["latency_ms"] < 1000 + 50


def test_fallback_rung_answers_after_a_failure(write_config):
    write_config(
        '[gateway]\nprovider = "broken"\nfallback = ["mock"]\n'
        '[providers.broken]\nkind = "mock"\nmode = "fail"\nfailure = "transport"\n'
    )
    from system1_gateway.core.gateway import Gateway

    result = Gateway.from_environment().judge(judge_payload())
    assert result["status"] == "answered" and result["provider"] == "mock"
    assert [(a["provider"], a["outcome"]) for a in result["attempts"]] == [("broken", "error"), ("mock", "ok")]
    assert result["order"] == ["broken", "mock"]


def test_unusable_provider_settings_are_a_config_error(mock_gateway):
    result = mock_gateway(latency_ms="soon").judge(judge_payload())
    assert result["error"]["code"] == "config_error"
    assert "[providers.mock] latency_ms" in result["error"]["message"]


def test_audit_is_metadata_only_unless_debug(mock_gateway, monkeypatch):
    secret_state = "TOP-SECRET evidence"
    mock_gateway().judge({"state": secret_state, "questions": {"q": {"type": "noul", "instructions": "private question?"}}, "request_id": "a1"})
    record = json.loads(audit_path().read_text().splitlines()[-1])
    assert record["request_id"] == "a1" and record["status"] == "answered" and record["provider"] == "mock"
    assert record["outcomes"] == [["mock", "ok"]] and "latency_ms" in record
    text = audit_path().read_text()
    assert "TOP-SECRET" not in text and "private question" not in text
    monkeypatch.setenv("SYSTEM1_LOG_LEVEL", "debug")
    mock_gateway().judge({"state": secret_state, "questions": {"q": {"type": "noul", "instructions": "?"}}})
    assert "TOP-SECRET" in audit_path().read_text().splitlines()[-1]


def test_unwritable_audit_never_fails_a_request(mock_gateway, monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("SYSTEM1_STATE_DIR", str(blocker))  # a file where a folder should be
    assert mock_gateway().judge(judge_payload())["status"] == "answered"


def test_invalid_request_never_reaches_a_provider(mock_gateway):
    result = mock_gateway().judge({"state": "s", "questions": {"x": {"type": "choice", "criteria": ["a"]}}})
    assert result["error"]["code"] == "invalid_request" and result["attempts"] == []
    assert "questions.x.criteria" in result["error"]["message"]


def test_non_object_payload_is_invalid(mock_gateway):
    for payload in (None, [], "text", 3):
        result = mock_gateway().judge(payload)
        assert result["error"]["code"] == "invalid_request"


def test_a_rung_that_cannot_hold_the_question_is_skipped(write_config):
    write_config(
        '[gateway]\nprovider = "small"\nfallback = ["mock"]\n[providers.small]\nkind = "mock"\n'
    )
    from system1_gateway.core.gateway import Gateway

    gateway = Gateway.from_environment()
    small = gateway.rung("small")
    small.limits = type(small.limits)(max_options=3)
    result = gateway.judge({"state": "s", "questions": {"c": {"type": "choice", "criteria": ["a", "b", "c", "d"]}}})
    assert result["provider"] == "mock"
    skipped = result["attempts"][0]
    assert skipped["outcome"] == "skipped" and "4 options exceed this provider's max_options 3" in skipped["detail"]


def test_health_degraded_when_the_first_rung_is_down(write_config):
    write_config('[gateway]\nprovider = "down"\nfallback = ["mock"]\n[providers.down]\nkind = "mock"\nmode = "fail"\n')
    from system1_gateway.core.gateway import Gateway

    health = Gateway.from_environment().health()
    assert health["status"] == "degraded" and health["reason"].startswith("down: ")
    assert [p["ok"] for p in health["providers"]] == [False, True]


def test_a_provider_bug_is_a_provider_error_not_a_crash(mock_gateway):
    gateway = mock_gateway()

    def broken(request, timeout_s):
        raise ZeroDivisionError("oops")

    gateway.rung("mock").judge = broken
    result = gateway.judge(judge_payload())
    assert result["error"]["code"] == "provider_error"
    assert result["attempts"][0]["detail"] == "mock: internal error (ZeroDivisionError)"


# -- the per-request chain override -----------------------------------------------------------
CHAIN_CONFIG = ('[gateway]\nprovider = "first"\nfallback = ["second"]\n'
                '[providers.first]\nkind = "mock"\nmode = "fail"\n'
                '[providers.second]\nkind = "mock"\nmodel = "second-model"\n'
                '[providers.third]\nkind = "mock"\nmodel = "third-model"\n')


def test_a_chain_override_sets_the_order_of_one_call(write_config):
    write_config(CHAIN_CONFIG)
    from system1_gateway.core.gateway import Gateway

    with Gateway.from_environment() as gateway:
        result = gateway.judge(judge_payload(), provider="first,third")
        alone = gateway.judge(judge_payload(), provider="third")
        spaced = gateway.decide({"question": "ok?"}, provider=" third , second ")
        default = gateway.judge(judge_payload())
    judge_result_adapter.validate_python(result)
    assert result["status"] == "answered" and result["provider"] == "third" and result["model"] == "third-model"
    assert result["order"] == ["first", "third"]
    assert [(a["provider"], a["outcome"]) for a in result["attempts"]] == [("first", "error"), ("third", "ok")]
    assert alone["order"] == ["third"] and [a["provider"] for a in alone["attempts"]] == ["third"]
    assert spaced["provider"] == "third" and [a["provider"] for a in spaced["attempts"]] == ["third"]
    assert default["order"] == ["first", "second"] and default["provider"] == "second"  # the override was one call's


@pytest.mark.parametrize("override, says", [
    ("first,first", "provider: lists 'first' twice (expected each rung once)"),
    ("first,,third", "provider: entry 2 of 'first,,third' is empty"),
    ("", "provider: empty (expected rung names separated by commas"),
    ("third,nosuch", "provider: 'nosuch' is not a configured rung (a call may name only"),
])
def test_a_bad_chain_override_is_an_invalid_request_before_any_rung(write_config, override, says):
    write_config(CHAIN_CONFIG)
    from system1_gateway.core.gateway import Gateway

    with Gateway.from_environment() as gateway:
        judged = gateway.judge(judge_payload(), provider=override)
        decided = gateway.decide({"question": "ok?"}, provider=override)
    for result in (judged, decided):
        assert result["status"] == "error" and result["error"]["code"] == "invalid_request"
        assert says in result["error"]["message"] and result["attempts"] == []


def test_an_injected_rung_may_be_named_in_an_override():
    from system1_gateway.config.settings import Config, GatewaySettings
    from system1_gateway.core.gateway import Gateway
    from system1_gateway.providers.mock import MockProvider

    with Gateway(Config(gateway=GatewaySettings(provider="mock")),
                 providers={"local": MockProvider("local", {"model": "local-1"})}) as gateway:
        result = gateway.judge(judge_payload(), provider="local,mock")
    assert result["provider"] == "local" and result["order"] == ["local", "mock"]


def test_a_billed_rung_in_an_override_still_needs_consent(write_config, monkeypatch):
    """Consent is checked where the chain runs: naming `openai` in a per-request chain skips it
    (never called) until a person confirmed the billing precautions, as in the configured chain."""
    from system1_gateway.core import consent
    from system1_gateway.core.gateway import Gateway

    called = []
    monkeypatch.setattr("system1_gateway.providers.openai.OpenAIProvider.judge",
                        lambda self, request, timeout_s: called.append(1))
    monkeypatch.setenv("SYSTEM1_OPENAI_API_KEY", "sk-test-abcdefgh")
    write_config(CHAIN_CONFIG)
    with Gateway.from_environment() as gateway:
        result = gateway.judge(judge_payload(), provider="openai,third")
    assert called == [] and result["status"] == "answered" and result["provider"] == "third"
    assert result["order"] == ["openai", "third"]
    skipped, answered = result["attempts"]
    assert skipped["provider"] == "openai" and skipped["outcome"] == "skipped"
    assert "no billing consent recorded for 'openai'" in skipped["detail"] and answered["outcome"] == "ok"
    consent.save({"openai": consent.now()})  # once confirmed, the override reaches it
    with Gateway.from_environment() as gateway:
        gateway.judge(judge_payload(), provider="openai,third")
    assert called == [1]


# -- a call names configured rungs only ------------------------------------------
@pytest.mark.parametrize("kind", ["laya", "systemone", "von", "ollama"])
def test_a_call_cannot_build_an_engine_the_owner_never_configured(write_config, monkeypatch, kind):
    """`?chain=laya` must not build a laya rung with its defaults and send SYSTEM1_LAYA_API_KEY
    and the evidence to whatever listens on 127.0.0.1:8000: a kind whose defaults point at a
    local port (or at nothing) is refused unless the owner configured it; nothing is built."""
    from system1_gateway import providers
    from system1_gateway.core.gateway import Gateway

    built = []
    cls = providers.provider_class(kind)
    monkeypatch.setattr(cls, "__init__", lambda self, *a, **k: built.append(kind))
    write_config(CHAIN_CONFIG)
    with Gateway.from_environment() as gateway:
        result = gateway.judge(judge_payload(), provider=f"third,{kind}")
    assert result["status"] == "error" and result["error"]["code"] == "invalid_request"
    assert result["error"]["message"].startswith(f"provider: {kind!r} is not a configured rung")
    assert "here: embedded, first, jev, mock, openai, second, third" in result["error"]["message"]
    assert built == []


def test_a_call_may_name_a_configured_table_and_the_free_kinds(write_config):
    from system1_gateway.core.gateway import Gateway

    write_config(CHAIN_CONFIG + '[providers.lab]\nkind = "laya"\nendpoint = "http://127.0.0.1:9"\n')
    with Gateway.from_environment() as gateway:
        assert gateway.override("lab,third,mock,embedded,jev,openai") == ["lab", "third", "mock", "embedded", "jev", "openai"]


def test_a_request_id_cannot_forge_a_log_line(mock_gateway, tmp_path):
    """A `request_id` with a newline started a line of its own in the gateway's
    log (`[%(request_id)s]` in every line's prefix). Control characters are escaped."""
    import logging

    from system1_gateway import logs

    log_file = tmp_path / "gateway.log"
    forged = "ok\n2026-12-04 00:00:00,000 WARNING system1 [admin] consent recorded for openai\x1b[2J"
    logs.configure("INFO", str(log_file))
    try:
        with mock_gateway() as gateway:
            result = gateway.judge({**judge_payload(), "request_id": forged})
    finally:
        logs.configure("WARNING")
        logs._configured = None
    assert result["status"] == "answered" and result["request_id"] == forged  # the caller's id, unchanged
    lines = log_file.read_text().splitlines()
    assert lines and all(line[:4].isdigit() for line in lines), lines  # every line is one of ours
    assert any("[ok\\n2026-12-04 00:00:00,000 WARNING system1 [admin] consent recorded for openai\\x1b[2J]" in line
               for line in lines), lines
    assert not any("\x1b" in line for line in lines)
    logging.getLogger(logs.LOGGER).handlers.clear()


def test_a_request_path_cannot_forge_a_log_line(caplog, mock_gateway):
    """The HTTP access line logged the percent-decoded path as it came, before any check."""
    import logging

    from fastapi.testclient import TestClient

    from system1_gateway.http.app import create_app

    with caplog.at_level(logging.INFO, logger="system1_gateway"), TestClient(create_app(mock_gateway())) as c:
        c.get("/x%0A2026-12-04 INFO system1 [admin] forged")
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("http GET")]
    assert lines and all("\n" not in line for line in lines) and "/x\\n2026" in lines[0], lines
