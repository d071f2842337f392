"""`jev` and `von` on local engines that follow their wire (reference/protocols.md §1, §6)."""

import json
import logging

import pytest

from fault_engine import FaultEngine
from system1_gateway.config.settings import Config, GatewaySettings
from system1_gateway.core.gateway import Gateway

QUESTIONS = {"d": {"type": "noul", "instructions": "Is it destructive?"},
             "t": {"type": "choice", "instructions": "Which tool?", "criteria": ["run_shell", "read_file"]}}


@pytest.fixture
def engine():
    srv = FaultEngine()
    yield srv
    srv.close()


def gateway(kind, url, **settings):
    return Gateway(Config(gateway=GatewaySettings(provider=kind, fallback=["mock"]),
                          providers={kind: {"endpoint": url, **settings}}))


def test_jev_sends_the_key_and_a_pinned_model(engine, monkeypatch):
    monkeypatch.setenv("SYSTEM1_JEV_API_KEY", "sk-jev-42")
    engine.model = "jev-1.13.0"
    result = gateway("jev", engine.url).judge({"state": "rm -rf /", "questions": QUESTIONS, "min_confidence": 0})
    assert result["provider"] == "jev" and result["model"] == "jev-1.13.0"
    sent = engine.requests[0]
    assert sent["model"] == "jev-1.13.0"
    assert {k.lower(): v for k, v in engine.headers[0].items()}["authorization"] == "Bearer sk-jev-42"
    assert "sk-jev-42" not in str(result)


def test_jev_without_its_key_is_skipped_and_other_variables_are_ignored(engine, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "not-for-jev")
    result = gateway("jev", engine.url).judge({"state": "s", "questions": QUESTIONS})
    assert result["attempts"][0]["outcome"] == "skipped" and "SYSTEM1_JEV_API_KEY" in result["attempts"][0]["detail"]
    assert engine.requests == []


def test_jev_latest_warns(engine, monkeypatch, caplog):
    caplog.set_level(logging.WARNING)
    monkeypatch.setenv("SYSTEM1_JEV_API_KEY", "k")
    gateway("jev", engine.url, model="jev-latest").rung("jev")
    assert any("moving alias" in r.message for r in caplog.records)


def test_jev_retry_after_ms_cools_the_rung(engine, monkeypatch):
    monkeypatch.setenv("SYSTEM1_JEV_API_KEY", "k")
    engine.mode = "529"
    gw = gateway("jev", engine.url)
    assert gw.judge({"state": "s", "questions": QUESTIONS})["provider"] == "mock"
    (cooling,) = gw.state.active()
    assert 3 <= cooling.remaining_s <= 4.5


def test_von_reads_noul_raw_and_records_both_models(engine):
    engine.mode = "von"
    result = gateway("von", engine.url).judge({"state": "s", "questions": QUESTIONS, "min_confidence": 0})
    assert result["provider"] == "von"
    assert result["answers"]["d"]["p_true"] == 0.8  # noul_raw, not the banded 0.83
    assert result["model"] == "von-1.3.0 (requested von-latest)"
    assert result["usage"] == {"input_tokens": 12, "output_tokens": None}


def test_von_engine_422_is_operational(engine):
    engine.mode = "von_422"
    gw = gateway("von", engine.url)
    result = gw.judge({"state": "s", "questions": QUESTIONS})
    first = result["attempts"][0]
    assert first["outcome"] == "error" and "engine failure (HTTP 422)" in first["detail"]
    assert result["provider"] == "mock" and [c.rung for c in gw.state.active()] == ["von"]


def test_jev_zstd_compresses_large_bodies(engine, monkeypatch):
    monkeypatch.setenv("SYSTEM1_JEV_API_KEY", "k")
    engine.model = "jev-1.13.0"
    gw = gateway("jev", engine.url, zstd=True)
    small = gw.judge({"state": "ls", "questions": QUESTIONS})
    big = gw.judge({"state": "log line\n" * 500, "questions": QUESTIONS})
    assert small["provider"] == big["provider"] == "jev"
    assert len(engine.compressed) == 1 and engine.compressed[0] < 1024  # only the large body, and it shrank
    assert engine.requests[1]["state"].count("log line") == 500


def test_the_key_never_reaches_the_logs_or_the_audit(engine, monkeypatch, caplog, tmp_path):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("SYSTEM1_JEV_API_KEY", "sk-never-logged")
    monkeypatch.setenv("SYSTEM1_LOG_LEVEL", "DEBUG")
    engine.mode = "401"
    gw = gateway("jev", engine.url)
    result = gw.judge({"state": "s", "questions": QUESTIONS})
    assert "HTTP 401" in result["attempts"][0]["detail"]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "HTTP 401" in logged and "sk-never-logged" not in logged
    audit = (tmp_path / "state" / "logs" / "audit.jsonl").read_text()
    assert "sk-never-logged" not in audit and "sk-never-logged" not in json.dumps(gw.status())
