"""The waterfall's one exception-mapping point (chain.py): what each failure means for the
rung, for the chain and for the people reading notices."""

import logging

import pytest

from conftest import judge_payload
from fault_engine import FaultEngine
from system1_gateway import notices
from system1_gateway.config.settings import Config, GatewaySettings
from system1_gateway.core import chain, consent
from system1_gateway.core.gateway import Gateway
from system1_gateway.model.results import judge_result_adapter
from system1_gateway.providers.base import BaseProvider, Health
from system1_gateway.providers.mock import MockProvider
from system1_gateway.store import SQLiteStore


class Recorder(BaseProvider):
    """Answers like mock and counts its calls (injected, not built from the config)."""

    kind = "recorder"

    def __init__(self, name="first"):
        self.name = name
        self.calls = 0
        self._mock = MockProvider(name, {})

    def judge(self, request, timeout_s):
        self.calls += 1
        return self._mock.judge(request, timeout_s)

    def health(self, timeout_s):
        return Health(True, "ok")


def two_rungs(**providers):
    return Gateway(Config(gateway=GatewaySettings(provider="first", fallback=["mock"])), providers=providers)


def test_injected_providers_answer_without_being_built():
    recorder = Recorder()
    result = two_rungs(first=recorder).judge(judge_payload())
    assert result["provider"] == "first" and recorder.calls == 1


def test_a_bug_in_the_answer_check_is_ours_and_does_not_advance(monkeypatch):
    def broken(*args):
        raise KeyError("bug")

    monkeypatch.setattr(chain, "finalize", broken)
    fallback = Recorder("mock")
    result = two_rungs(first=Recorder(), mock=fallback).judge(judge_payload())
    judge_result_adapter.validate_python(result)
    assert result["error"]["code"] == "internal_error" and "answer check" in result["error"]["message"]
    assert [a["provider"] for a in result["attempts"]] == ["first"] and fallback.calls == 0
    assert Gateway().state.active() == []  # the engine is not blamed


def test_an_unsupported_rung_is_skipped_silently(caplog):
    small = Recorder()
    small.limits = type(small.limits)(max_options=2)
    with caplog.at_level(logging.WARNING):
        result = two_rungs(first=small).judge(
            {"state": "s", "questions": {"c": {"type": "choice", "criteria": ["a", "b", "c"]}}})
    assert result["attempts"][0]["outcome"] == "skipped" and result["provider"] == "mock"
    assert "failed" not in caplog.text and small.calls == 0


def test_an_empty_key_on_an_inherited_rung_skips_without_cooling(monkeypatch):
    # ollama inherits the systemone exchange; its key variable is set but empty.
    engine = FaultEngine()
    try:
        monkeypatch.setenv("OLLAMA_KEY", "")
        gw = Gateway(Config(gateway=GatewaySettings(provider="ollama", fallback=["mock"]),
                            providers={"ollama": {"endpoint": engine.url, "model": "qwen3", "api_key_env": "OLLAMA_KEY"}}))
        result = gw.judge(judge_payload())
        first = result["attempts"][0]
        assert (first["outcome"], result["provider"]) == ("skipped", "mock")
        assert "OLLAMA_KEY is not set" in first["detail"]
        assert gw.state.active() == [] and engine.requests == []
    finally:
        engine.close()


def test_a_missing_optional_package_is_a_config_error_naming_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "openai" else real(name, *a))
    consent.save({"openai": consent.now()})
    gw = Gateway(Config(gateway=GatewaySettings(provider="openai", fallback=["mock"])))
    monkeypatch.setenv("SYSTEM1_OPENAI_API_KEY", "sk-test-abcdefgh")
    result = gw.judge(judge_payload())
    hint = "pip install 'system1-gateway[openai]'"
    assert result["provider"] == "mock" and hint in result["attempts"][0]["detail"]
    assert "internal error" not in result["attempts"][0]["detail"]
    assert hint in gw.status()["rungs"]["openai"]["credentials"]["error"]
    assert hint in gw.health()["providers"][0]["detail"]
    alone = Gateway(Config(gateway=GatewaySettings(provider="openai"))).judge(judge_payload())
    assert alone["error"]["code"] == "config_error"


@pytest.mark.parametrize("how", ["SYSTEM1_FALLBACK", "config"])
def test_a_billed_rung_without_consent_is_skipped_never_called(monkeypatch, write_config, how, caplog):
    called = []
    monkeypatch.setattr("system1_gateway.providers.openai.OpenAIProvider.judge",
                        lambda self, request, timeout_s: called.append(1))
    monkeypatch.setenv("SYSTEM1_OPENAI_API_KEY", "sk-test-abcdefgh")
    if how == "config":  # a hand edit
        write_config('[gateway]\nprovider = "mock"\nfallback = ["openai"]\n')
        gw = Gateway.from_environment()
    else:
        monkeypatch.setenv("SYSTEM1_PROVIDER", "openai")
        monkeypatch.setenv("SYSTEM1_FALLBACK", "mock")
        gw = Gateway.from_environment()
    with caplog.at_level(logging.WARNING):
        result = gw.judge(judge_payload(), provider="openai")
    assert called == [] and result["error"] is not None
    (attempt,) = result["attempts"]
    assert attempt["outcome"] == "skipped" and "no billing consent recorded for 'openai'" in attempt["detail"]
    assert "no billing consent" in caplog.text
    assert gw.status()["rungs"]["openai"]["blocked"].startswith("no billing consent")
    assert gw.starting_rung() != "openai"


def test_notices_are_deduplicated_across_processes(tmp_path, caplog):
    # Two stores on one file stand for two one-shot processes (CLI, hooks).
    first, second = SQLiteStore(tmp_path / "state.db"), SQLiteStore(tmp_path / "state.db")
    with caplog.at_level(logging.WARNING):
        assert notices.notice("k", "rung x failed", shared=first)
        notices._last.clear()  # what a new process starts with
        assert not notices.notice("k", "rung x failed", shared=second)
    assert caplog.text.count("rung x failed") == 1


def test_close_frees_clients_and_threads():
    engine = FaultEngine()
    try:
        gw = Gateway(Config(gateway=GatewaySettings(provider="fault", timeout_s=2, deadline_s=4),
                            providers={"fault": {"kind": "systemone", "endpoint": engine.url, "model": "fault-1"}}))
        assert gw.judge(judge_payload())["provider"] == "fault"
        client = gw.rung("fault")._client
        with gw:
            pass
        assert client.is_closed and gw._chain._pools == {}
    finally:
        engine.close()


class Echoing(BaseProvider):
    """Fails with its own key in the text by a path no HTTP classifier sees."""

    kind = "echoing"

    def __init__(self):
        self.name = "first"

    def secrets(self):
        return ("Najbe8rt5BfLGEU",)

    def judge(self, request, timeout_s):
        from system1_gateway.model.errors import ProviderFailure

        raise ProviderFailure("first: model requires more memory Najbe8rt5BfLGEU", kind="server")

    def health(self, timeout_s):
        return Health(True, "ok")


def test_the_rungs_own_key_is_removed_from_any_failure_text():
    gw = two_rungs(first=Echoing())
    result = gw.judge(judge_payload())
    assert result["provider"] == "mock" and "[redacted]" in result["attempts"][0]["detail"]
    assert "Najbe8rt5BfLGEU" not in str(result) + str(gw.status())


class NotAReply(Recorder):
    def judge(self, request, timeout_s):
        return {"answers": {}}


def test_a_provider_returning_no_reply_is_malformed_and_the_chain_advances():
    result = two_rungs(first=NotAReply()).judge(judge_payload())
    assert result["provider"] == "mock" and result["attempts"][0]["outcome"] == "malformed"
    assert "not a Reply" in result["attempts"][0]["detail"]


def test_a_rung_that_cannot_be_built_is_a_config_error_and_the_chain_goes_on(monkeypatch):
    def no_ca_file(self, name, settings):  # what httpx.Client raises with SSL_CERT_FILE=/missing
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr("system1_gateway.providers.jev.JevProvider.__init__", no_ca_file)
    monkeypatch.setenv("SYSTEM1_JEV_API_KEY", "sk-test-abcdefgh")
    gw = Gateway(Config(gateway=GatewaySettings(provider="jev", fallback=["mock"])))
    result = gw.judge(judge_payload())
    assert result["provider"] == "mock" and "cannot be built (FileNotFoundError" in result["attempts"][0]["detail"]
    assert gw.status()["rungs"]["jev"]["credentials"]["error"].startswith("[providers.jev] cannot be built")
    assert gw.health()["providers"][0]["ok"] is False
    gw.warm()  # never raises


def test_close_leaves_injected_providers_to_their_owner():
    shared = Recorder()
    closed = []
    shared.close = lambda: closed.append(1)
    gw = two_rungs(first=shared)
    with gw:
        gw.judge(judge_payload())
    assert closed == [] and gw.rung("first") is shared


def test_health_reports_a_rung_that_may_not_run_as_down(monkeypatch):
    monkeypatch.setenv("SYSTEM1_OPENAI_API_KEY", "sk-test-abcdefgh")
    health = Gateway(Config(gateway=GatewaySettings(provider="openai", fallback=["mock"]))).health()
    assert health["status"] == "degraded" and "no billing consent" in health["providers"][0]["detail"]


class Stuck(BaseProvider):
    """An engine that ignores its timeout (a hung SDK call): each attempt holds its worker
    thread until released."""

    kind = "stuck"

    def __init__(self, name):
        import threading

        self.name = name
        self.release = threading.Event()

    def judge(self, request, timeout_s):
        self.release.wait(30)
        raise chain.ProviderTimeout(f"{self.name}: released")

    def health(self, timeout_s):
        return Health(True, "ok")


def test_an_engine_that_holds_its_workers_cannot_starve_another_rung():
    """Eight hung attempts on one rung took the chain's whole 8-thread pool, and
    every other worker-thread rung (the embedded engine, so the guard) failed with
    `deadline_exceeded` until restart. Each rung has its own workers."""
    from concurrent.futures import ThreadPoolExecutor

    stuck, other = Stuck("slow"), Recorder("other")  # both on worker threads, as the embedded engine runs
    gateway = Gateway(Config(gateway=GatewaySettings(provider="slow", fallback=[], timeout_s=0.3, deadline_s=0.5)),
                      providers={"slow": stuck, "other": other})
    try:
        with ThreadPoolExecutor(chain.RUNG_WORKERS + 2) as callers:
            hung = list(callers.map(lambda _: gateway.judge(judge_payload()), range(chain.RUNG_WORKERS + 2)))
        assert all(r["status"] == "error" and r["attempts"][0]["outcome"] == "timeout" for r in hung), hung
        result = gateway.judge(judge_payload(), provider="other")
        assert result["status"] == "answered" and result["provider"] == "other", result
        assert other.calls == 1
    finally:
        stuck.release.set()
        gateway.close()
