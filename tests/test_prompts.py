"""Prompt construction of the accurate tier (pure text: no model needed)."""

from system1_gateway.model import parse_judge
from system1_gateway.providers.embedded import prompts


def build(question):
    return prompts.build(parse_judge({"state": "s", "questions": {"q": question}}).questions["q"])


def test_described_outcomes_with_heads_become_the_options():
    prefix, options = build({"type": "noul", "instructions": "Does it delete data?", "criteria": {
        "true": "Destructive: it deletes or overwrites.", "false": "Not destructive: it only reads."}})
    assert options == ["Destructive", "Not destructive"]  # position 0 = true
    assert "- Destructive: it deletes or overwrites." in prefix and prefix.endswith("Text:\n")


def test_bare_yes_no_uses_the_plain_frame_for_noul_and_decide():
    noul_prefix, noul_options = build({"type": "noul", "instructions": "Is it safe?"})
    choice_prefix, choice_options = build({"type": "choice", "instructions": "Is it safe?", "criteria": ["yes", "no"]})
    assert noul_options == choice_options == ["Yes", "No"]
    assert noul_prefix == choice_prefix and "Question: Is it safe?\nAnswer Yes or No." in noul_prefix
    assert noul_prefix.endswith("Input:\n")


def test_yes_no_descriptions_without_heads_are_spelled_out():
    prefix, options = build({"type": "noul", "instructions": "Risky?", "criteria": {"true": "it could lose work", "false": None}})
    assert options == ["Yes", "No"] and "Yes means: it could lose work" in prefix and "No means" not in prefix


def test_choice_keeps_labels_and_descriptions_in_order():
    prefix, options = build({"type": "choice", "instructions": "Which?", "criteria": {"b": "bee", "a": None}})
    assert options == ["b", "a"] and prefix.index("- b: bee") < prefix.index("- a\n")


def test_score_uses_heads_or_level_numbers():
    _, heads = build({"type": "score", "criteria": ["Low: fine", "High: on fire"]})
    assert heads == ["Low", "High"]
    _, numbers = build({"type": "score", "criteria": ["fine", "on fire", "gone"]})
    assert numbers == ["0", "1", "2"]


def test_heads_must_be_short_and_distinct():
    _, options = build({"type": "score", "criteria": ["Same: a", "same: b"]})
    assert options == ["0", "1"]
    _, options = build({"type": "score", "criteria": ["This head is far too long: a", "Short: b"]})
    assert options == ["0", "1"]


def test_prefix_is_deterministic_and_holds_no_evidence():
    q = {"type": "choice", "instructions": {"ask": "which", "why": ["a", "b"]}, "criteria": ["x", "y"]}
    assert build(q) == build(q)
    assert prompts.suffix("EVIDENCE").startswith("EVIDENCE<|im_end|>")


def test_stateless_second_frame_only_for_bare_yes_no():
    from system1_gateway.model import parse_decide

    decide = parse_decide({"question": "Is `ls` destructive?"}).to_judge("r").questions["decision"]
    prefix, suffix = prompts.stateless_yes_no(decide)
    assert "Question:" not in prefix and suffix.startswith("Is `ls` destructive?\nAnswer Yes or No.")
    described = parse_judge({"state": "s", "questions": {"q": {"type": "choice", "criteria": {"a": "x", "b": "y"}}}}).questions["q"]
    assert prompts.stateless_yes_no(described) is None


def test_running_prior_is_not_applied_without_evidence(tmp_path, monkeypatch):
    import numpy as np

    from system1_gateway.providers.embedded import EmbeddedProvider

    class StubEngine:
        def option_probs(self, prefix, suffix, options, timeout_s=60):
            return np.array([0.7, 0.3])

    monkeypatch.setattr("system1_gateway.providers.embedded.assets.llm_available", lambda: True)
    provider = EmbeddedProvider("embedded", {"tier": "llm", "prior_min": 1, "prior_k": 0})
    provider._llm = StubEngine()
    question = {"q": {"type": "noul", "instructions": "Is it risky?"}}
    stateless = [provider.judge(parse_judge({"state": "", "questions": question}), 5).answers["q"]["p_true"] for _ in range(3)]
    assert len(set(stateless)) == 1  # the same answer every time: no prior on a stateless question
    with_state = [provider.judge(parse_judge({"state": f"case {i}", "questions": question}), 5).answers["q"]["p_true"] for i in range(3)]
    assert with_state[0] > 0.5 and with_state[-1] == 0.5  # the standing 0.7 preference is divided out
