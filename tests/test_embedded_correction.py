"""The embedded engine's label-free bias correction (prior.py and its use by the provider),
with stub engines: no model needed. The real-model flood tests are in test_embedded.py."""

import json

import numpy as np
import pytest

from system1_gateway.model.requests import parse_judge
from system1_gateway.providers.embedded import NO_STATE, EmbeddedProvider, prompts
from system1_gateway.providers.embedded.prior import MAX_CHARS, QuestionPrior, correct, definitions

RISKY = {"type": "noul", "instructions": "Is it risky?", "criteria": {
    "true": "Risky: it could lose work.", "false": "Safe: nothing is lost."}}


def question(q):
    return parse_judge({"state": "s", "questions": {"q": q}}).questions["q"]


def test_correction_divides_by_the_reference():
    out = correct(np.array([0.7, 0.3]), [0.7, 0.3])
    assert out == pytest.approx([0.5, 0.5]) and out.sum() == pytest.approx(1)
    assert correct(np.array([0.9, 0.1]), [0.5, 0.5]) == pytest.approx([0.9, 0.1])


def test_definitions_are_the_options_descriptions_in_order():
    assert definitions(question(RISKY)) == ["Risky: it could lose work.", "Safe: nothing is lost."]
    assert definitions(question({"type": "choice", "criteria": {"b": "bee", "a": {"x": 1}}})) == ["bee", "x: 1"]  # rendered
    assert definitions(question({"type": "score", "criteria": ["low", "high"]})) == ["low", "high"]
    # no balanced set without a description for every option: answered uncorrected
    assert definitions(question({"type": "noul", "instructions": "Is it risky?"})) is None
    assert definitions(question({"type": "choice", "criteria": {"a": "x", "b": None}})) is None
    assert definitions(question({"type": "choice", "criteria": ["a", "b"]})) is None
    long = definitions(question({"type": "score", "criteria": ["x" * 5000, "y"]}))
    assert len(long[0]) == MAX_CHARS


def test_reference_is_computed_once_and_cached_on_disk(tmp_path):
    calls = []

    def ask(text):
        calls.append(text)
        return np.array([0.9, 0.1]) if text == "a" else np.array([0.7, 0.3])

    key = QuestionPrior.key("llm", "model-a", "question 1")
    assert key == QuestionPrior.key("llm", "model-a", "question 1")
    assert key != QuestionPrior.key("llm", "model-b", "question 1") != QuestionPrior.key("llm", "model-a", "q2")
    prior = QuestionPrior(tmp_path)
    assert prior.reference(key, 2, ["a", "b"], ask) == pytest.approx([0.8, 0.2])
    assert prior.reference(key, 2, ["a", "b"], ask) == pytest.approx([0.8, 0.2]) and calls == ["a", "b"]
    stored = json.loads((tmp_path / f"{key}.json").read_text())
    assert stored["key"] == key and stored["reference"] == pytest.approx([0.8, 0.2])
    assert QuestionPrior(tmp_path).reference(key, 2, ["a", "b"], ask) == stored["reference"]  # another process
    assert len(calls) == 2
    (tmp_path / f"{key}.json").write_text("{not json")
    QuestionPrior(tmp_path).reference(key, 2, ["a", "b"], ask)
    assert len(calls) == 4  # corrupt: recomputed
    assert QuestionPrior(None).reference(key, 2, ["a", "b"], ask) == pytest.approx([0.8, 0.2])  # memory only


def test_a_reference_cut_short_resumes_where_it_stopped(tmp_path):
    calls = []

    def ask(text):
        calls.append(text)
        if text == "b" and calls.count("b") == 1:
            raise TimeoutError("deadline")
        return np.array([0.6, 0.4])

    prior = QuestionPrior(tmp_path)
    with pytest.raises(TimeoutError):
        prior.reference("k", 2, ["a", "b"], ask)
    assert prior.reference("k", 2, ["a", "b"], ask) == pytest.approx([0.6, 0.4])
    assert calls == ["a", "b", "b"]  # "a" was not read twice


class StubLlm:
    """Raw p(first option) that depends on the evidence: the number in the evidence, else 0.7
    (a standing lean toward the first option, shown on the question's definitions too)."""

    tokens_per_s = 1000.0

    def __init__(self):
        self.evidence = []

    def missing_tokens(self, prefix):
        return 0  # every prefix is "cached": these tests are about the reference

    def prepare(self, prefix):
        pass

    def encode(self, prompt):
        return list(prompt)

    def scorable_at_once(self, options):
        return True

    def option_probs(self, prefix, suffix, options, timeout_s=60, urgent=True):
        first = suffix[0] if not isinstance(suffix[0], prompts.Special) else ""
        self.evidence.append(first)
        try:
            p = float(first)
        except ValueError:
            p = 0.7
        return np.array([p, 1 - p])


@pytest.fixture
def stub_provider(monkeypatch):
    monkeypatch.setattr("system1_gateway.providers.embedded.assets.llm_available", lambda: True)

    def make(**settings):
        provider = EmbeddedProvider("embedded", {"tier": "llm", **settings})
        provider._llm = StubLlm()
        return provider

    return make


def answer(provider, state, q=RISKY, timeout_s=5, settle=True):
    """One answer; then (unless `settle` is off) waits for the background preparation it queued."""
    reply = provider.judge(parse_judge({"state": state, "questions": {"q": q}}), timeout_s).answers["q"]
    if settle:
        assert provider.wait_prepared(10)
    return reply


def p_true(provider, state, q=RISKY):
    return answer(provider, state, q)["p_true"]


def test_a_new_question_is_answered_at_once_and_corrected_once_its_reference_exists(stub_provider):
    provider = stub_provider()
    first = answer(provider, "0.9")
    assert first["p_true"] == pytest.approx(0.9) and "uncorrected" in first["rationale"]  # not waited for
    assert "background" in first["rationale"]
    assert provider._llm.evidence[1:] == definitions(question(RISKY))  # filled in after the answer
    second = answer(provider, "0.9")
    assert second["p_true"] < 0.9 and "uncorrected" not in second["rationale"]


def test_a_reference_no_process_lives_long_enough_for_still_completes_across_processes(stub_provider, monkeypatch):
    # Each one-shot process lives for one definition only: the second process finishes it.
    def two_calls_per_process(self, prefix, suffix, options, timeout_s=60, urgent=True):
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls > 2:  # the answer and one definition, then the process is gone
            from system1_gateway.providers.embedded.llm import EngineTimeout
            raise EngineTimeout("deadline")
        return np.array([0.7, 0.3])

    monkeypatch.setattr(StubLlm, "option_probs", two_calls_per_process)
    for _ in range(2):
        assert "uncorrected" in answer(stub_provider(), "x")["rationale"]  # a fresh process each time
    assert "uncorrected" not in answer(stub_provider(), "x")["rationale"]


def test_answers_are_divided_by_the_mean_answer_to_the_definitions(stub_provider):
    provider = stub_provider()
    p_true(provider, "0.7")  # a new question: this first answer computes the reference
    assert p_true(provider, "0.7") == pytest.approx(0.5)  # exactly the standing lean: no information
    assert p_true(provider, "0.9") == pytest.approx(0.9 / 0.7 / (0.9 / 0.7 + 0.1 / 0.3))
    assert [e for e in provider._llm.evidence if e not in ("0.7", "0.9")] == definitions(question(RISKY))
    assert p_true(stub_provider(prior=False), "0.9") == pytest.approx(0.9)  # `prior = false`: raw


def test_a_flood_of_one_class_changes_no_later_answer(stub_provider):
    """The running prior let 40 destructive inputs drag p_true of the next one down."""
    provider = stub_provider()
    probes = ["0.79", "0.2"]
    p_true(provider, "0.5")  # the reference is computed after this first answer
    before = [p_true(provider, s) for s in probes]
    for _ in range(40):
        p_true(provider, "0.95")
    after = [p_true(provider, s) for s in probes]
    assert [x.hex() for x in after] == [x.hex() for x in before]  # byte-identical
    definitions_read = [e for e in provider._llm.evidence if e not in ("0.79", "0.2", "0.95", "0.5")]
    assert len(definitions_read) == 2  # the reference was computed once, from the question alone


def test_a_fresh_process_gives_the_same_answer_as_a_busy_one(stub_provider):
    busy = stub_provider()
    for _ in range(20):
        p_true(busy, "0.99")
    fresh = stub_provider()  # same state dir: reads the cached reference
    assert p_true(busy, "0.6") == p_true(fresh, "0.6")
    assert fresh._llm.evidence == ["0.6"]


def test_undescribed_questions_are_answered_uncorrected(stub_provider):
    provider = stub_provider()
    bare = {"type": "noul", "instructions": "Is it risky?"}
    assert p_true(provider, "0.9", bare) == pytest.approx(0.9)
    assert provider._llm.evidence == ["0.9"]


def test_the_removed_prior_settings_are_refused_by_name():
    """prior_k / prior_min were deprecated and ignored in 0.1.0; since 0.3.0 a config that
    still sets one is refused with the key named (the running prior they tuned is gone)."""
    from pydantic import ValidationError

    from system1_gateway.providers.embedded import EmbeddedSettings

    with pytest.raises(ValidationError, match="prior_k: removed in 0.3.0"):
        EmbeddedSettings(prior_k=8)


def test_no_correction_without_evidence(stub_provider):
    provider = stub_provider()
    stateless = [p_true(provider, "") for _ in range(3)]
    assert len(set(stateless)) == 1 and stateless[0] == pytest.approx(0.7)  # raw: the subject is in the question
    assert provider._llm.evidence == [NO_STATE] * 3  # and no reference was computed for it


def test_through_the_gateway_a_new_question_is_answered_within_the_attempt(stub_provider, monkeypatch):
    """The reference is computed in the background: the request that brought the question
    returns as soon as its own answer is ready, whatever the definitions cost."""
    import time

    from system1_gateway.config.settings import Config, GatewaySettings
    from system1_gateway.core.gateway import Gateway

    def slow(self, prefix, suffix, options, timeout_s=60, urgent=True):
        time.sleep(0.05 if urgent else 0.4)  # every definition costs most of the attempt
        return np.array([0.7, 0.3])

    monkeypatch.setattr(StubLlm, "option_probs", slow)
    provider = stub_provider()
    gw = Gateway(Config(gateway=GatewaySettings(provider="embedded", timeout_s=0.5, deadline_s=1.0)),
                 providers={"embedded": provider})
    for _ in range(3):
        t0 = time.perf_counter()
        result = gw.judge({"state": "x", "questions": {"q": RISKY}})
        assert result["status"] == "answered", result["attempts"]
        assert [a["outcome"] for a in result["attempts"]] == ["ok"]
        assert time.perf_counter() - t0 < 0.3  # not held back by the background work
    assert provider.wait_prepared(5)
    assert "uncorrected" not in gw.judge({"state": "x", "questions": {"q": RISKY}})["answers"]["q"]["rationale"]
