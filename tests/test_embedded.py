"""The embedded engine loaded for real (models from the installed registry packages).

Marked `models`: they need the `local` extra and take a few seconds to load; CI runs them.
One engine is shared by the whole module to keep the suite fast."""

import os

import numpy as np
import pytest

from system1_gateway.config import Config, GatewaySettings
from system1_gateway.core import Gateway
from system1_gateway.errors import ProviderTimeout
from system1_gateway.model import parse_judge
from system1_gateway.results import judge_result_adapter
from system1_gateway.providers.embedded import EmbeddedProvider, assets
from system1_gateway.providers.embedded.prior import RunningPrior

from conftest import run_cli

needs_llm = pytest.mark.skipif(not assets.llm_available(), reason="accurate tier not installed (pip install '.[local]')")


@pytest.fixture(scope="module")
def shared_state(tmp_path_factory):
    """One state dir (and so one assembled GGUF) for every model test of the module."""
    return tmp_path_factory.mktemp("models-state")


@pytest.fixture(scope="module")
def llm_gateway(shared_state):
    old = os.environ.get("SYSTEM1_STATE_DIR")
    os.environ["SYSTEM1_STATE_DIR"] = str(shared_state)
    try:
        # Embedded defaults (tier auto); generous budgets because every question here is new
        # to the engine, and a new question's prompt prefix costs seconds on 2 CPU cores.
        gateway = Gateway(Config(gateway=GatewaySettings(timeout_s=120, deadline_s=240)))
        gateway.warm()
        yield gateway
    finally:
        if old is None:
            os.environ.pop("SYSTEM1_STATE_DIR", None)
        else:
            os.environ["SYSTEM1_STATE_DIR"] = old


DESTRUCTIVE = {"type": "noul", "instructions": "Does this shell command delete or overwrite existing data?"}


@pytest.mark.models
@needs_llm
def test_llm_answers_every_question_type(llm_gateway):
    result = llm_gateway.judge({
        "state": "ERROR: payment declined twice, customer was charged two times for one order",
        "questions": {
            "billing": {"type": "noul", "instructions": "Is this about billing or payments?"},
            "team": {"type": "choice", "instructions": "Which team should handle it?", "criteria": {"billing": "payments and invoices", "frontend": "UI bugs", "docs": None}},
            "urgency": {"type": "score", "instructions": "How urgent is it?", "criteria": ["can wait", "this week", "today"]},
        },
        "min_confidence": 0,
    })
    judge_result_adapter.validate_python(result)
    assert result["status"] == "answered", result["error"]
    assert "qwen2.5-coder-1.5b-instruct-q4_k_m" in result["model"].split("+")
    answers = result["answers"]
    assert answers["billing"]["p_true"] > 0.5
    assert answers["team"]["choice"] == "billing"
    assert 0 <= answers["urgency"]["score"] <= 2
    assert answers["billing"]["rationale"].startswith("embedded llm:")  # undescribed: llm only
    assert answers["urgency"]["rationale"].split(":")[0] in ("embedded fast", "embedded llm+fast")


@pytest.mark.models
@needs_llm
def test_llm_ranks_a_destructive_command_above_a_harmless_one(llm_gateway):
    def p_true(command):
        return llm_gateway.judge({"state": command, "questions": {"d": DESTRUCTIVE}})["answers"]["d"]["p_true"]

    assert p_true("rm -rf /var/lib/postgresql/data") > p_true("ls -la /var/lib/postgresql")


@pytest.mark.models
@needs_llm
def test_a_decision_past_its_timeout_is_aborted_and_the_engine_recovers(llm_gateway):
    import time

    provider = llm_gateway.rung("embedded")
    request = parse_judge({"state": "word " * 600, "questions": {"d": {"type": "noul", "instructions": "Is this text repetitive?"}}})
    t0 = time.perf_counter()
    with pytest.raises(ProviderTimeout):
        provider.judge(request, 0.3)
    assert time.perf_counter() - t0 < 2.0  # the decode was aborted, not waited out
    reply = provider.judge(parse_judge({"state": "ls", "questions": {"d": DESTRUCTIVE}}), 60)
    assert 0 <= reply.answers["d"]["p_true"] <= 1


@pytest.mark.models
def test_fast_tier_answers_described_options_only():
    provider = EmbeddedProvider("embedded", {"tier": "fast"})
    gateway = Gateway()
    gateway._rungs["embedded"] = provider
    result = gateway.judge({
        "state": "I was charged twice for my subscription this month, please refund me.",
        "questions": {"team": {"type": "choice", "criteria": {
            "billing": "Payments, invoices, charges, refunds and subscription plans",
            "technical": "Crashes, errors, bugs and performance problems"}}},
        "min_confidence": 0,
    })
    assert result["status"] == "answered" and result["model"] == "all-minilm-l6-v2-int8"
    assert result["answers"]["team"]["choice"] == "billing"
    bare = gateway.judge({"state": "rm -rf /", "questions": {"d": DESTRUCTIVE}})
    assert bare["error"]["code"] == "provider_error"
    assert "fast tier cannot answer a yes/no question" in bare["error"]["message"]


@pytest.mark.models
@needs_llm
def test_quick_start_command_makes_a_real_decision(shared_state, llm_gateway):
    code, out, err = run_cli("decide", "Is `git push --force origin main` destructive?",
                             env={"SYSTEM1_STATE_DIR": str(shared_state)}, timeout=300)
    assert code == 0, err
    assert out[0]["provider"] == "embedded" and set(out[0]["probabilities"]) == {"yes", "no"}
    assert out[0]["status"] == "decided" and out[0]["decision"] == "yes"  # measured p(yes) 0.76


@pytest.mark.models
@needs_llm
def test_stateless_yes_no_ranks_a_force_push_above_a_listing(llm_gateway):
    def p_yes(question):
        return llm_gateway.decide({"question": question, "min_confidence": 0})["probabilities"]["yes"]

    assert p_yes("Is `git push --force origin main` destructive?") > p_yes("Is `ls -la` destructive?")


def test_running_prior_removes_a_standing_bias(tmp_path):
    prior = RunningPrior(k=2, min_count=3, path=tmp_path / "p.json")
    biased = np.array([0.8, 0.2])
    outs = [prior.correct("q", biased) for _ in range(5)]
    assert np.allclose(outs[0], biased)  # not applied before min_count
    assert outs[-1][0] < 0.8 and outs[-1].sum() == pytest.approx(1.0)
    prior.save()
    again = RunningPrior(k=2, min_count=3, path=tmp_path / "p.json")
    assert again.correct("q", biased)[0] == pytest.approx(outs[-1][0], abs=0.05)  # persisted
    assert np.allclose(again.correct("other question", biased), biased)  # per question


def test_running_prior_survives_a_corrupt_file(tmp_path):
    path = tmp_path / "p.json"
    path.write_text("{not json")
    assert np.allclose(RunningPrior(path=path).correct("q", np.array([0.5, 0.5])), [0.5, 0.5])
