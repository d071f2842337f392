"""`laya` against the real `laya-serve` 0.2.1 package (fake backend) and a wire-faithful fake
of upstream `laya[serve]` (reference/protocols.md §2, §3)."""

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from conftest import ROOT, require
from fault_engine import answers_for, closed_port
from local_http import LocalServer, QuietHandler
from system1_gateway.config.settings import Config, GatewaySettings
from system1_gateway.core.gateway import Gateway

TOOLS = Path(os.environ.get("SYSTEM1_TOOLS_DIR", ROOT / ".tools"))
LAYA_SERVE = TOOLS / "laya" / "bin" / "laya-serve"
QUESTIONS = {
    "team": {"type": "choice", "instructions": "Which team?", "criteria": {"billing": "Payments", "technical": "Bugs", "sales": None}},
    "urgent": {"type": "noul", "instructions": "Is it urgent?"},
    "severity": {"type": "score", "instructions": "How severe?", "criteria": ["low", "medium", "high", "critical"]},
}


def gateway(endpoint, **settings):
    return Gateway(Config(gateway=GatewaySettings(provider="laya", fallback=["mock"]),
                          providers={"laya": {"endpoint": endpoint, **settings}}))


@pytest.fixture
def laya_serve(tmp_path):
    require(LAYA_SERVE.exists(), f"laya-serve ({LAYA_SERVE})")
    servers = []

    def start(**env):
        port = closed_port()
        proc = subprocess.Popen([str(LAYA_SERVE), "--host", "127.0.0.1", "--port", str(port)],
                                env={**os.environ, "LAYA_SERVE_BACKEND": "fake", **env},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        servers.append(proc)
        url = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                if httpx.get(url + "/healthz", timeout=0.5).status_code == 200:
                    return url
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("laya-serve did not start")

    yield start
    for proc in servers:
        proc.terminate()
        proc.wait(timeout=10)


def test_real_laya_serve_full_judge(laya_serve):
    url = laya_serve()
    result = gateway(url).judge({"state": "Help! My payouts have been failing for 3 days.", "questions": QUESTIONS, "min_confidence": 0})
    assert result["status"] == "answered" and result["provider"] == "laya", result
    assert result["model"] == "laya-serve/laya-english (checkpoint unverified)"
    answers = result["answers"]
    assert answers["team"]["choice"] == "billing" and answers["urgent"]["p_true"] == 0.5  # the fake backend's answers
    assert answers["severity"]["score"] == 1.5
    assert answers["team"]["rationale"] == "laya typed-decisions: billing=0.33, technical=0.33, sales=0.33"
    assert result["usage"] == {"input_tokens": None, "output_tokens": None}  # 0/0 from laya-serve means unknown


def test_real_laya_serve_auth(laya_serve, monkeypatch):
    url = laya_serve(LAYA_SERVE_API_KEY="sekret")
    no_key = gateway(url).judge({"state": "s", "questions": QUESTIONS})
    first = no_key["attempts"][0]
    assert first["outcome"] == "error" and "HTTP 401" in first["detail"] and no_key["provider"] == "mock"
    monkeypatch.setenv("SYSTEM1_LAYA_API_KEY", "sekret")
    keyed = gateway(url)
    assert [c.rung for c in keyed.state.active()] == ["laya"]  # a credential failure cools 300 s
    keyed.state.clear()  # what `system1 retry` does
    with_key = keyed.judge({"state": "s", "questions": QUESTIONS})
    assert with_key["provider"] == "laya" and "sekret" not in json.dumps(with_key)


def test_real_laya_serve_422_is_a_refusal_that_does_not_advance(laya_serve):
    url = laya_serve()
    result = gateway(url).judge({"state": "word " * 33000, "questions": {"urgent": QUESTIONS["urgent"]}})
    assert result["error"]["code"] == "provider_error" and "HTTP 422" in result["error"]["message"]
    assert [a["provider"] for a in result["attempts"]] == ["laya"]


class UpstreamLaya:
    """laya[serve]: `/health` with `loaded`, `model` always laya-rl-agent, truth in routing."""

    def __init__(self, routed="typed-decisions", loaded=("typed-decisions",)):
        self.routed, self.loaded, self.requests = routed, list(loaded), []
        fake = self

        class Handler(QuietHandler):
            _send = QuietHandler.send_json

            def do_GET(self):
                if self.path == "/health":
                    self._send(200, {"status": "ok", "loaded": fake.loaded})
                else:
                    self._send(404, {"detail": "Not Found"})

            def do_POST(self):
                body = self.read_json()
                fake.requests.append(body)
                answers = answers_for(body["questions"], first_p=0.7)
                for a in answers.values():
                    a["answer_confidence"] = max(a["probabilities"].values())
                    a["confidence"] = 0.12  # entropy-based: must never be used
                self._send(200, {"model": "laya-rl-agent", "answers": answers, "usage": {"input_tokens": 42, "output_tokens": 0},
                                 "routing": {"model": fake.routed, "reason": f"explicit model='{body.get('model')}'"}})

        self._local = LocalServer(Handler)
        self.url = self._local.url

    def close(self):
        self._local.close()


@pytest.fixture
def upstream():
    servers = []

    def make(**kw):
        servers.append(UpstreamLaya(**kw))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def test_upstream_pins_the_checkpoint_and_sends_yes_no_as_choice(upstream):
    srv = upstream()
    result = gateway(srv.url).judge({"state": "The deploy failed.", "questions": QUESTIONS, "min_confidence": 0})
    assert result["provider"] == "laya" and result["model"] == "laya/typed-decisions"
    sent = srv.requests[0]
    assert sent["model"] == "typed-decisions"
    assert sent["questions"]["urgent"] == {"type": "choice", "criteria": {"yes": None, "no": None}, "instructions": "Is it urgent?"}
    answers = result["answers"]
    assert answers["urgent"]["p_true"] == 0.7 and answers["team"]["engine_confidence"] == 0.7  # answer_confidence, not 0.12
    assert result["usage"] == {"input_tokens": 42, "output_tokens": None}


def test_upstream_answer_from_another_checkpoint_is_malformed(upstream):
    srv = upstream(routed="multilingual")
    result = gateway(srv.url).judge({"state": "s", "questions": QUESTIONS})
    first = result["attempts"][0]
    assert first["outcome"] == "malformed" and "answered by checkpoint 'multilingual', pinned 'typed-decisions'" in first["detail"]
    assert result["provider"] == "mock"


def test_more_than_twenty_options_go_to_the_fallback(upstream):
    srv = upstream()
    many = {"q": {"type": "choice", "criteria": [f"o{i}" for i in range(21)]}}
    result = gateway(srv.url).judge({"state": "s", "questions": many})
    assert result["attempts"][0]["outcome"] == "skipped" and "21 options exceed" in result["attempts"][0]["detail"]
    assert result["provider"] == "mock" and srv.requests == []


def test_english_checkpoint_abstains_on_non_latin_text(upstream):
    srv = upstream(routed="english", loaded=["english"])
    gw = gateway(srv.url, model="english")
    latin = gw.judge({"state": "The build is broken", "questions": {"urgent": QUESTIONS["urgent"]}, "min_confidence": 0})
    assert latin["answers"]["urgent"]["abstained"] is False
    cyrillic = gw.judge({"state": "Сборка сломана, срочно почините", "questions": {"urgent": QUESTIONS["urgent"]}, "min_confidence": 0})
    answer = cyrillic["answers"]["urgent"]
    assert answer["abstained"] and answer["abstain_reason"] == "engine" and answer["probabilities"]


def test_health_warns_when_the_pinned_checkpoint_is_not_preloaded(upstream):
    srv = upstream(loaded=["english"])
    health = gateway(srv.url).health()
    probe = health["providers"][0]
    assert probe["ok"] and "'typed-decisions' is not preloaded" in probe["detail"]


def test_remote_endpoint_and_key_in_file_are_refused():
    result = gateway("http://10.0.0.5:8000").judge({"state": "s", "questions": QUESTIONS})
    assert "is not a loopback address" in result["attempts"][0]["detail"]
    keyed = gateway("http://127.0.0.1:9", api_key_env="X").judge({"state": "s", "questions": QUESTIONS})
    assert "read from SYSTEM1_LAYA_API_KEY only" in keyed["attempts"][0]["detail"]


LAUNCHER = ROOT / "engines" / "laya" / "start.sh"


def test_launcher_does_nothing_when_the_port_is_taken(upstream):
    srv = upstream()
    port = srv.url.rsplit(":", 1)[1]
    proc = subprocess.run(["bash", str(LAUNCHER)], env={**os.environ, "LAYA_PORT": port}, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and f"port {port} is already in use" in proc.stdout


def test_launcher_names_the_missing_server(tmp_path):
    proc = subprocess.run(["bash", str(LAUNCHER)], env={**os.environ, "LAYA_PORT": str(closed_port()), "LAYA_BIN": "no-such-laya"},
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1 and "pip install 'laya[serve]'" in proc.stderr


def test_launcher_starts_a_server_bound_to_loopback(tmp_path, laya_serve):
    # laya-serve 0.2.1 takes --host/--port flags, not LAYA_HOST/LAYA_PORT: a shim maps them,
    # so this runs the launcher's real start path against the real package.
    port = closed_port()
    shim = tmp_path / "laya-shim"
    shim.write_text(f'#!/usr/bin/env bash\nexec env LAYA_SERVE_BACKEND=fake "{LAYA_SERVE}" --host "$LAYA_HOST" --port "$LAYA_PORT"\n')
    shim.chmod(0o755)
    proc = subprocess.run(["bash", str(LAUNCHER)], env={**os.environ, "LAYA_PORT": str(port), "LAYA_BIN": str(shim)},
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and "starting on 127.0.0.1" in proc.stdout
    pid = int(proc.stdout.strip().rsplit(" ", 1)[1])
    try:
        for _ in range(100):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=0.5).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            pytest.fail("launcher's server did not come up")
        assert (LAUNCHER.parent / "laya-serve.log").exists()
    finally:
        os.kill(pid, 15)
