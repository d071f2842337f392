"""Learned heads: files, refusal of bad ones, answers through the engine, the cascade, calibration.

The fast tier (MiniLM, base install) is loaded for real: heads read its embeddings. The
accurate tier is replaced by a stub only where the test is about *whether* it is asked.
"""

import logging
import time

import numpy as np
import pytest

from system1_gateway.config.settings import Config, GatewaySettings
from system1_gateway.core.gateway import Gateway
from system1_gateway.learn import fit, metrics
from system1_gateway.model import builtins
from system1_gateway.providers.embedded import EmbeddedProvider, heads
from system1_gateway.providers.embedded.heads import CHAR_DIM, EMBED_DIM, FEATURE_VERSION, Head, HeadStore

DESTRUCTIVE = builtins.BUILTINS["destructive"]


def gateway_for(provider):
    return Gateway(Config(gateway=GatewaySettings(provider="embedded")), providers={"embedded": provider})


def toy_head(question_hash, labels=("true", "false"), name="toy", bias=(2.0, -2.0), **meta):
    W = np.zeros((len(labels), EMBED_DIM + CHAR_DIM + len(labels)), np.float32)
    return Head({"format": 1, "feature_version": FEATURE_VERSION, "name": name, "question_hash": question_hash,
                 "type": "noul", "labels": list(labels), "temperature": 1.0, "chars_weight": 1.0, **meta},
                W, np.array(bias, np.float32))


# -- files ---------------------------------------------------------------------------------------
def test_every_builtin_ships_a_head_that_loads():
    store = HeadStore(None)
    for b in builtins.BUILTINS.values():
        head = store.find(_parsed(b.question()))
        assert head is not None, b.name
        assert head.meta["builtin"] == b.id and head.name == f"{b.name}@{b.version}"
        assert head.meta["training"]["n"] >= 200 and head.meta["training"]["data_sha256"]
        assert 0 < head.temperature < 20
        assert head.path.stat().st_size < 2_000_000  # a few MB at most


def test_a_head_round_trips_through_its_file(tmp_path):
    head = toy_head("abc")
    head.save(tmp_path / "abc.npz")
    back = Head.load(tmp_path / "abc.npz")
    assert back.labels == ["true", "false"] and np.array_equal(back.W, head.W)
    p = back.probs(np.zeros(EMBED_DIM, np.float32), heads.char_features("ls -la"), np.zeros(2, np.float32))
    assert p.shape == (2,) and abs(p.sum() - 1) < 1e-6 and p[0] > 0.9
    assert not list(tmp_path.glob(".*tmp"))  # atomic: no temp file left behind


@pytest.mark.parametrize("damage, says", [
    (lambda raw: raw[: len(raw) // 2], "unreadable"),
    (lambda raw: b"not a zip at all", "unreadable"),
])
def test_a_truncated_or_garbage_head_is_refused(tmp_path, damage, says):
    toy_head("abc").save(tmp_path / "abc.npz")
    path = tmp_path / "abc.npz"
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(heads.HeadError, match=says):
        Head.load(path)


def test_heads_for_other_features_or_with_bad_weights_are_refused(tmp_path):
    toy_head("a", feature_version="minilm@0").save(tmp_path / "a.npz")
    with pytest.raises(heads.HeadError, match="made for features"):
        Head.load(tmp_path / "a.npz")
    bad = toy_head("b")
    bad.W[0, 0] = np.nan
    bad.save(tmp_path / "b.npz")
    with pytest.raises(heads.HeadError, match="not finite"):
        Head.load(tmp_path / "b.npz")
    # weights changed after the checksum was taken: a corrupt file
    good = toy_head("c")
    good.save(tmp_path / "c.npz")
    with np.load(tmp_path / "c.npz") as data:
        W, b, meta = data["W"].copy(), data["b"], data["meta"]
    W[1, 5] = 3.0
    np.savez(tmp_path / "c.npz", W=W, b=b, meta=meta)
    with pytest.raises(heads.HeadError, match="checksum"):
        Head.load(tmp_path / "c.npz")
    wrong_shape = toy_head("d", labels=("true", "false"))
    wrong_shape.W = wrong_shape.W[:, :10]
    wrong_shape.save(tmp_path / "d.npz")
    with pytest.raises(heads.HeadError, match="do not fit"):
        Head.load(tmp_path / "d.npz")


def test_a_corrupt_user_head_falls_back_to_zero_shot_with_one_warning(fast_provider, tmp_path, caplog, monkeypatch):
    question = {"type": "noul", "instructions": "Is this about the database?",
                "criteria": {"true": "About databases: tables, queries, migrations.", "false": "About something else."}}
    key = _parsed(question).wording_hash()
    user = tmp_path / "state" / "heads"
    toy_head(key).save(user / f"{key}.npz")
    (user / f"{key}.npz").write_bytes(b"PK\x03\x04 truncated")
    provider = EmbeddedProvider("embedded", {"tier": "fast"})
    provider._fast = fast_provider._fast_engine()
    with caplog.at_level(logging.WARNING, logger="system1_gateway"):
        for _ in range(3):
            result = gateway_for(provider).judge({"state": "ALTER TABLE users ADD COLUMN age int", "questions": {"q": question}})
    assert result["status"] == "answered"
    assert result["answers"]["q"]["rationale"].startswith("embedded fast:")  # zero-shot
    refusals = [r for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 1 and "unreadable" in refusals[0].getMessage()


def test_a_user_head_replaces_the_shipped_one(fast_provider, tmp_path):
    user = tmp_path / "state" / "heads"
    toy_head(DESTRUCTIVE.hash, name="mine", bias=(-3.0, 3.0)).save(user / f"{DESTRUCTIVE.hash}.npz")
    provider = EmbeddedProvider("embedded", {"tier": "fast"})
    provider._fast = fast_provider._fast_engine()
    command = "make distclean"  # no policy rule decides it: the head does
    result = gateway_for(provider).judge({"state": command, "questions": {"d": {"builtin": "destructive"}}})
    assert result["model"] == "head:mine"
    assert result["answers"]["d"]["p_true"] < 0.1  # the toy head's bias, not the shipped head
    (user / f"{DESTRUCTIVE.hash}.npz").unlink()  # removed: the shipped head answers again
    result = gateway_for(provider).judge({"state": command, "questions": {"d": {"builtin": "destructive"}}})
    assert result["model"] == "head:destructive@2"


# -- answers through the engine -------------------------------------------------------------------
def test_builtin_questions_are_answered_by_their_heads_calibrated(fast_provider):
    gw = gateway_for(fast_provider)
    # commands no policy rule decides (docs/guard.md): the head answers each part
    result = gw.judge({"state": "make distclean", "questions": {"d": {"builtin": "system1/destructive@1"}}})
    assert result["status"] == "answered" and result["model"] == "head:destructive@1"
    answer = result["answers"]["d"]
    assert answer["calibrated"] is True and answer["model"] == "head:destructive@1"
    assert answer["rationale"].startswith("part 1 of 1: make distclean: p(destructive) = ")
    assert answer["p_true"] > 0.5
    safe = gw.judge({"state": "npm run lint", "questions": {"d": DESTRUCTIVE.question()}})  # by text
    assert safe["model"] == "head:destructive@2" and safe["answers"]["d"]["p_true"] < 0.5
    # the current version asks about loss: a build output's cleanup loses nothing a rebuild cannot make
    now = gw.judge({"state": "make distclean", "questions": {"d": {"builtin": "destructive"}}})
    assert now["model"] == "head:destructive@2" and now["answers"]["d"]["p_true"] < 0.5


def test_the_four_routing_features_of_a_prompt_come_from_heads_in_one_request(fast_provider):
    gw = gateway_for(fast_provider)
    questions = {name: {"builtin": name} for name in ("read_only", "design", "review", "specified")}
    prompt = "Explain how the retry logic in src/http/client.py decides when to give up."
    gw.judge({"state": prompt, "questions": questions})  # warm
    t0 = time.perf_counter()
    result = gw.judge({"state": prompt, "questions": questions})
    elapsed = time.perf_counter() - t0
    assert result["status"] == "answered"
    assert set(result["model"].split("+")) == {f"head:{n}@1" for n in questions}
    assert result["answers"]["read_only"]["p_true"] > 0.5 and result["answers"]["design"]["p_true"] < 0.5
    assert elapsed < 2.0  # generous: the figure of record is benchmarks/heads_latency.py


def test_heads_work_without_the_accurate_tier(fast_provider, monkeypatch):
    from system1_gateway.providers.embedded import assets

    monkeypatch.setattr(assets, "llm_available", lambda: False)
    provider = EmbeddedProvider("embedded", {})  # auto, as a base install has it
    provider._fast = fast_provider._fast_engine()
    result = gateway_for(provider).judge({"state": "npm run db:reset", "questions": {"d": {"builtin": "destructive"}}})
    assert result["model"] == "head:destructive@2" and result["answers"]["d"]["p_true"] > 0.5


def test_heads_can_be_switched_off(fast_provider):
    provider = EmbeddedProvider("embedded", {"tier": "fast", "heads": False})
    provider._fast = fast_provider._fast_engine()
    result = gateway_for(provider).judge({"state": "npm run lint", "questions": {"d": {"builtin": "destructive"}}})
    assert result["model"] == "all-minilm-l6-v2-int8"


# -- the cascade --------------------------------------------------------------------------------
class StubLlm:
    """Stands in for the accurate tier's answers: records what it was asked."""

    def __init__(self, p_true):
        self.p_true, self.asked = p_true, 0

    def __call__(self, questions, state_text, deadline, optional, timeout_s):
        self.asked += len(questions)
        return [np.array([self.p_true, 1 - self.p_true]) for _ in questions]


def cascade_provider(fast_provider, monkeypatch, tmp_path, below, head_bias, llm_p_true, weight=0.0):
    from system1_gateway.providers.embedded import assets

    question = {"type": "noul", "instructions": "Is this a question about billing?",
                "criteria": {"true": "About billing.", "false": "Not about billing."}}
    key = _parsed(question).wording_hash()
    toy_head(key, name="billing", bias=head_bias, cascade={"below": below, "head_weight": weight}).save(
        tmp_path / "state" / "heads" / f"{key}.npz")
    monkeypatch.setattr(assets, "llm_available", lambda: True)
    # the zero-shot engine the head escalates to is the llm alone here (fast never sure, weight 0)
    provider = EmbeddedProvider("embedded", {"tier": "auto", "fast_accept": 1.01, "fast_weight": 0.0})
    provider._fast = fast_provider._fast_engine()
    stub = StubLlm(llm_p_true)
    monkeypatch.setattr(provider, "_llm_asks", stub)
    # The chain still asks for the accurate tier's load (`needs_full`); the stub has nothing to
    # load. (Unstubbed, each of these tests joined the 1 GB model into its fresh state dir and
    # loaded llama.cpp, seconds of work whose engine the stub never used.)
    monkeypatch.setattr(provider, "warm_full", lambda: None)
    return provider, stub, question


def test_a_sure_head_never_asks_the_llm(fast_provider, monkeypatch, tmp_path):
    provider, stub, q = cascade_provider(fast_provider, monkeypatch, tmp_path, below=0.8, head_bias=(3.0, -3.0), llm_p_true=0.1)
    result = gateway_for(provider).judge({"state": "refund my invoice", "questions": {"q": q}})
    assert stub.asked == 0 and result["model"] == "head:billing"
    assert result["answers"]["q"]["p_true"] > 0.9


def test_an_unsure_head_escalates_and_the_llm_decides_the_blend(fast_provider, monkeypatch, tmp_path):
    provider, stub, q = cascade_provider(fast_provider, monkeypatch, tmp_path, below=0.8, head_bias=(0.2, -0.2),
                                         llm_p_true=0.05, weight=0.0)
    result = gateway_for(provider).judge({"state": "refund my invoice", "questions": {"q": q}, "min_confidence": 0})
    assert stub.asked == 1
    assert result["model"] == "all-minilm-l6-v2-int8+head:billing+qwen2.5-coder-1.5b-instruct-q4_k_m"
    answer = result["answers"]["q"]
    assert answer["rationale"].startswith("embedded llm+fast+head:billing:")
    assert answer["p_true"] == pytest.approx(0.05, abs=1e-3)  # head weight 0: the llm decides
    assert answer["calibrated"] is False  # the blend has no fitted temperature


def test_an_escalated_question_keeps_the_heads_answer_when_the_llm_is_not_ready(fast_provider, monkeypatch, tmp_path):
    provider, stub, q = cascade_provider(fast_provider, monkeypatch, tmp_path, below=0.8, head_bias=(0.3, -0.3), llm_p_true=0.5)
    monkeypatch.setattr(provider, "_llm_asks", lambda qs, *a: [None for _ in qs])
    result = gateway_for(provider).judge({"state": "refund", "questions": {"q": q}, "min_confidence": 0})
    answer = result["answers"]["q"]
    assert result["model"] == "head:billing" and "answered by the learned head alone" in answer["rationale"]
    assert answer["p_true"] == pytest.approx(1 / (1 + np.exp(-0.6)), abs=1e-4)


# -- calibration --------------------------------------------------------------------------------
def test_fit_temperature_recovers_an_overconfident_scale():
    rng = np.random.default_rng(0)
    true_logits = rng.normal(0, 1.5, size=(4000, 3))
    y = np.array([rng.choice(3, p=np.exp(z) / np.exp(z).sum()) for z in true_logits])
    assert fit.fit_temperature(true_logits * 3.0, y) == pytest.approx(3.0, rel=0.1)


def test_a_heads_temperature_repairs_an_overconfident_fit(fast_provider):
    """Overlapping classes and label noise: a nearly unregularised fit is overconfident on
    held-out items; the temperature fitted on other folds' logits brings their ECE down."""
    rng = np.random.default_rng(1)
    words = ["deploy", "rollback", "release", "hotfix", "canary", "migration", "cache", "index"]
    texts, y = [], []
    for i in range(160):
        label = i % 2
        picks = rng.choice(words[:5] if label == 0 else words[3:], size=3)
        texts.append(f"ticket {i}: " + " ".join(picks))
        y.append(label if rng.random() > 0.2 else 1 - label)  # 20 % label noise
    y = np.array(y)
    X = fit.featurize(texts, fast_provider._fast_engine().embed, ["release work", "data work"])
    logits = np.zeros((len(y), 2))
    for train, test in fit._folds(y, 5, 0):
        logits[test] = fit._fit(X.take(train), y[train], 2, 2.0, 1e4).logits(X.take(test))
    raw = np.apply_along_axis(heads.softmax, 1, logits)
    cal = fit.cross_fitted_temperature(logits, y)
    assert fit.fit_temperature(logits, y) > 1.5  # overconfident: soften
    assert metrics.ece(cal, y) < metrics.ece(raw, y) - 0.05
    assert metrics.accuracy(cal, y) == metrics.accuracy(raw, y)  # a temperature never changes the argmax
    _, nested = fit.cross_validate(X, y, 2, k=5, grid=fit.TEACH_GRID)  # what teach reports
    assert metrics.ece(nested, y) < 0.15


def test_shipped_heads_were_measured_calibrated_on_held_out_dev_folds():
    store = HeadStore(None)
    eces = [store.find(_parsed(b.question())).meta["metrics"]["head"]["ece"] for b in builtins.BUILTINS.values()]
    assert max(eces) < 0.15 and np.mean(eces) < 0.08  # per question on 40-70 items; pooled in docs/studies/heads.md


def _parsed(question):
    from system1_gateway.model.requests import parse_judge

    return parse_judge({"state": "x", "questions": {"q": question}}).questions["q"]


def test_warm_reads_the_heads_and_caches_the_builtins_option_embeddings():
    provider = EmbeddedProvider("embedded", {"tier": "fast"})
    provider.warm()
    cache = provider._fast_engine()._cache
    for b in builtins.BUILTINS.values():
        assert tuple(heads.option_texts(_parsed(b.question()))) in cache, b.name
    assert provider.head_store()._shipped is not None  # files read and checked at warm-up
    provider.close()


# -- reading long prompts whole ------------------------------------------------------------------
def test_every_reading_equals_the_first_window_for_short_text_and_reads_the_tail_of_long_text(fast_provider):
    engine = fast_provider._fast_engine()
    short = ["git status", "Explain what the retry decorator in src/net.py does."]
    for read in (engine.embed_whole, engine.embed_mix):
        assert np.allclose(engine.embed(short), read(short), atol=1e-6)
    head_ = "## Task\nRefactor the payment module.\n" + "Background detail about the project. " * 120
    a, b = head_ + "\n## Output\nOnly list the problems; do not change any file.", head_ + "\n## Output\nRewrite every file."
    first = engine.embed([a, b])
    assert np.allclose(first[0], first[1], atol=1e-6)  # the first window never sees the last line
    for read in (engine.embed_whole, engine.embed_mix):
        vecs = read([a, b])
        assert float(vecs[0] @ vecs[1]) < 0.999  # read whole, the two differ
        assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    mixed = first[0] + engine.embed_whole([a])[0]
    assert np.allclose(engine.embed_mix([a])[0], mixed / np.linalg.norm(mixed), atol=1e-5)


def test_a_head_reads_the_evidence_the_way_it_was_trained(fast_provider, tmp_path, monkeypatch):
    """Heads of every feature version load and are fed the embedding they were trained on:
    @2 the first window, the current version (mix) the first window and the whole text."""
    assert heads.READINGS[FEATURE_VERSION] == "mix"
    q = _parsed(DESTRUCTIVE.question())
    seen = {}
    engine = fast_provider._fast_engine()
    for version, reading in heads.READINGS.items():
        head = toy_head(q.wording_hash(), name=reading, feature_version=version)
        head.save(tmp_path / "h.npz")
        head = Head.load(tmp_path / "h.npz")
        calls = []
        for method in ("embed", "embed_whole", "embed_mix"):
            monkeypatch.setattr(engine, method, lambda texts, m=method, f=getattr(engine, method): calls.append(m) or f(texts))
        monkeypatch.setattr(fast_provider, "head_store", lambda h=head: type("S", (), {"find": lambda self, _q: h})())
        (answer,) = fast_provider._head_answers([q], "rm -rf build/")
        assert answer[0] is head and abs(answer[1].sum() - 1) < 1e-6
        seen[head.reading] = calls
        monkeypatch.undo()
    assert seen == {"first": ["embed"], "whole": ["embed_whole"], "mix": ["embed_mix"]}
