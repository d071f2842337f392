"""`openai` through the real `openai` SDK against a local fake of `POST /v1/decisions`
(shapes from reference/protocols.md §5), and the billing consent gate of `system1 order`."""

import json
import os
import pty
import select
import subprocess
import sys
import time

import pytest

from conftest import judge_payload
from local_http import LocalServer, QuietHandler
from system1_gateway.config.settings import Config, GatewaySettings
from system1_gateway.core import consent
from system1_gateway.core.gateway import Gateway
from system1_gateway.model.results import decide_response_adapter, judge_result_adapter

DRIP_S = 10.0


class FakeDecisions:
    def __init__(self):
        self.mode = "ok"
        self.batches = []
        self.auth = []
        fake = self

        class Handler(QuietHandler):
            _send = QuietHandler.send_json

            def do_POST(self):
                body = self.read_json()
                fake.auth.append(self.headers.get("authorization"))
                errors = {"401": (401, "Incorrect API key provided", "invalid_api_key", {}),
                          "429": (429, "Rate limit reached", "rate_limit_exceeded", {"retry-after": "11"}),
                          "529": (529, "Overloaded", None, {}),
                          "quota": (429, "You exceeded your current quota", "insufficient_quota", {})}
                if fake.mode == "drip":  # headers, then a byte at a time: each read is quick
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", "100000")
                    self.end_headers()
                    for _ in range(int(DRIP_S / 0.1)):  # bounded: the server always stops
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        time.sleep(0.1)
                    return None
                if fake.mode == "huge":  # a valid answer padded to 12 MiB: cut as it arrives
                    return self._send(200, {"model": "gpt-6-luna", "answers": [], "pad": "x" * (12 << 20)})
                if fake.mode in errors:
                    status, msg, code, headers = errors[fake.mode]
                    return self._send(status, {"error": {"message": msg, "type": "error", "param": None, "code": code}}, headers)
                fake.batches.append(body)
                answers = []
                for i, q in enumerate(body["questions"]):
                    if fake.mode == "refusal" and i == 0:
                        answers.append({"type": "refusal", "name": None})
                    elif q["type"] == "predicate":
                        answers.append({"type": "predicate", "name": None, "probability": 0.9})
                    elif q["type"] == "choice":
                        values = [c["value"] for c in q["choices"]]
                        probs = [{"value": v, "probability": 0.8 if j == 0 else 0.2 / (len(values) - 1)} for j, v in enumerate(values)]
                        answers.append({"type": "choice", "name": None, "choice": values[0], "confidence": 0.6, "probabilities": probs})
                    else:
                        n = len(q["levels"])
                        probs = [{"label": str(j), "value": j, "probability": 0.7 if j == n - 1 else 0.3 / (n - 1)} for j in range(n)]
                        answers.append({"type": "score", "name": None, "score": 1.0, "confidence": 0.5, "probabilities": probs})
                self._send(200, {"model": "gpt-6-luna", "answers": answers,
                                 "usage": {"input_tokens": 50, "output_tokens": 3, "total_tokens": 53}})

        self._local = LocalServer(Handler, "/v1")
        self.url = self._local.url

    def close(self):
        self._local.close()


@pytest.fixture
def decisions(monkeypatch):
    monkeypatch.setenv("SYSTEM1_OPENAI_API_KEY", "sk-test-openai")
    srv = FakeDecisions()
    yield srv
    srv.close()


def gateway(url, consented=True):
    if consented:  # what an interactive `system1 order openai …` records
        consent.save({"openai": consent.now()})
    return Gateway(Config(gateway=GatewaySettings(provider="openai", fallback=["mock"], timeout_s=20, deadline_s=40),
                          providers={"openai": {"endpoint": url}}))


def test_450_questions_go_in_two_sequential_batches_in_order(decisions):
    questions = {f"q{i:03d}": ({"type": "noul", "instructions": f"Is item {i} odd?"} if i % 3 == 0 else
                               {"type": "choice", "instructions": "?", "criteria": {f"a{i}": "first", f"b{i}": None}} if i % 3 == 1 else
                               {"type": "score", "instructions": "?", "criteria": ["lo", "hi"]}) for i in range(450)}
    result = gateway(decisions.url).judge({"state": {"ticket": 7}, "questions": questions, "min_confidence": 0})
    judge_result_adapter.validate_python(result)
    assert result["provider"] == "openai" and result["model"] == "gpt-6-luna"
    assert [len(b["questions"]) for b in decisions.batches] == [400, 50]
    assert decisions.batches[0]["input"] == '{"ticket":7}'
    assert result["answers"]["q001"]["choice"] == "a1" and result["answers"]["q448"]["choice"] == "a448"  # by position
    assert result["answers"]["q000"]["p_true"] == 0.9 and result["answers"]["q002"]["level"] == 1
    assert result["usage"] == {"input_tokens": 100, "output_tokens": 6}
    assert decisions.auth[0] == "Bearer sk-test-openai"


def test_predicate_carries_the_true_false_descriptions(decisions):
    gateway(decisions.url).judge({"state": "s", "questions": {"d": {"type": "noul", "instructions": "Destructive?",
                                  "criteria": {"true": "deletes data", "false": "reads only"}}}})
    q = decisions.batches[0]["questions"][0]
    assert q == {"type": "predicate", "instructions": "Destructive?\nTrue means: deletes data\nFalse means: reads only"}


def test_a_refusal_is_a_typed_no_answer(decisions):
    decisions.mode = "refusal"
    result = gateway(decisions.url).judge({"state": "s", "min_confidence": 0, "questions": {
        "r": {"type": "score", "instructions": "?", "criteria": ["a", "b"]}, "ok": {"type": "noul", "instructions": "?"}}})
    judge_result_adapter.validate_python(result)
    assert result["answers"]["r"] == {"type": "refusal", "question_type": "score", "abstained": True,
                                      "abstain_reason": "refused", "calibrated": False, "rationale": None}
    assert result["answers"]["ok"]["p_true"] == 0.9 and result["provider"] == "openai"
    decided = gateway(decisions.url).decide({"question": "Pick", "options": ["x", "y"]})
    decide_response_adapter.validate_python(decided)
    assert decided["status"] == "abstained" and decided["abstain_reason"] == "refused" and decided["probabilities"] is None


@pytest.mark.parametrize("mode, cools, words", [
    ("401", 300, "HTTP 401: Incorrect API key"),
    ("429", 11, "HTTP 429: Rate limit reached"),
    ("529", 30, "HTTP 529"),
    ("quota", 300, "exceeded your current quota"),
    ("huge", 30, "response larger than max_response_bytes (8388608 bytes)"),
])
def test_errors_map_to_waterfall_outcomes(decisions, mode, cools, words):
    decisions.mode = mode
    gw = gateway(decisions.url)
    result = gw.judge({"state": "s", "questions": {"d": {"type": "noul", "instructions": "?"}}})
    first = result["attempts"][0]
    assert first["outcome"] == "error" and words in first["detail"] and result["provider"] == "mock"
    (cooling,) = gw.state.active()
    assert cools - 2 <= cooling.remaining_s <= cools and "sk-test-openai" not in json.dumps(result)


def test_generic_openai_key_is_ignored(monkeypatch, decisions):
    monkeypatch.delenv("SYSTEM1_OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-generic")
    gw = gateway(decisions.url)
    result = gw.judge({"state": "s", "questions": {"d": {"type": "noul", "instructions": "?"}}})
    assert result["attempts"][0]["outcome"] == "skipped" and decisions.auth == []
    creds = gw.status()["rungs"]["openai"]["credentials"]
    assert creds["present"] is False and "OPENAI_API_KEY is ignored" in creds["note"]


CONFIG = '[gateway]\nprovider = "embedded"\nfallback = []\n'


def run_order_in_pty(args, answer, env):
    """Run `system1 order …` with a terminal on stdin, answer its prompt, return (code, output)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "system1_gateway.cli", "order", *args],
                            stdin=slave, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 30
    while b"Type 'yes'" not in seen and time.monotonic() < deadline and proc.poll() is None:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            seen += os.read(master, 4096)
    if b"Type 'yes'" in seen:
        os.write(master, answer.encode() + b"\n")
    out = proc.stdout.read().decode()
    code = proc.wait(timeout=30)
    os.close(master)
    return code, seen.decode(errors="replace"), out


def test_consent_gate_interactive_headless_and_re_adding(write_config):
    path = write_config(CONFIG)
    env = {**os.environ, "SYSTEM1_CONFIG": str(path)}
    headless = subprocess.run([sys.executable, "-m", "system1_gateway.cli", "order", "openai", "embedded"],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=30)
    assert headless.returncode == 2 and "needs an interactive confirmation" in headless.stdout
    assert path.read_text() == CONFIG
    code, prompt, out = run_order_in_pty(["openai", "embedded"], "no", env)
    assert code == 2 and "auto-recharge is off" in prompt and "not a spending cap" in prompt and path.read_text() == CONFIG
    code, prompt, out = run_order_in_pty(["openai", "embedded"], "yes", env)
    assert code == 0 and 'provider = "openai"' in path.read_text()
    reorder = subprocess.run([sys.executable, "-m", "system1_gateway.cli", "order", "embedded", "openai"],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=30)
    assert reorder.returncode == 0, reorder.stdout  # reordering an approved rung does not ask again
    subprocess.run([sys.executable, "-m", "system1_gateway.cli", "order", "embedded"], stdin=subprocess.DEVNULL,
                   capture_output=True, env=env, timeout=30, check=True)
    again = subprocess.run([sys.executable, "-m", "system1_gateway.cli", "order", "embedded", "openai"],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=30)
    assert again.returncode == 2 and "needs an interactive confirmation" in again.stdout  # removed, re-added: asks again


def test_a_dripping_endpoint_never_holds_an_attempt_past_its_deadline(decisions):
    """httpx times each read on its own, so an endpoint sending a byte every 0.1 s
    kept each attempt's worker thread for as long as it dripped; with the chain's workers all
    held, every later call failed. The SDK's sockets now end at the attempt's deadline."""
    from concurrent.futures import ThreadPoolExecutor

    decisions.mode = "drip"
    consent.save({"openai": consent.now()})
    gw = Gateway(Config(gateway=GatewaySettings(provider="openai", fallback=[], timeout_s=1.5, deadline_s=2.0),
                        providers={"openai": {"endpoint": decisions.url}}))
    try:
        started = time.monotonic()
        with ThreadPoolExecutor(10) as callers:
            dripped = list(callers.map(lambda _: gw.judge(judge_payload()), range(10)))
        assert all(r["status"] == "error" and r["attempts"][-1]["outcome"] == "timeout" for r in dripped), dripped
        assert time.monotonic() - started < DRIP_S / 2  # bounded by the deadline, not by the drip
        decisions.mode = "ok"
        answered = gw.judge(judge_payload())  # the rung's workers are free again
        assert answered["status"] == "answered" and answered["provider"] == "openai", answered
    finally:
        gw.close()
