"""The heads' optional words block: word n-grams, opening words and structure features
beside the embedding. A head file without it loads and answers as it always did; one with it
answers as its fit computed, refuses to load when its block is of another version or shape, and
the block costs well under the embedding's time."""

import time

import numpy as np
import pytest

from system1_gateway.learn import fit
from system1_gateway.providers.embedded import EmbeddedProvider, heads
from system1_gateway.providers.embedded.heads import (
    CHAR_DIM,
    EMBED_DIM,
    FEATURE_VERSION,
    STRUCT,
    WORD_DIM,
    WORD_FEATURES,
    Head,
    char_features,
    word_features,
)


def toy(words: bool, bias=(0.5, -0.5), **meta) -> Head:
    rng = np.random.default_rng(1)
    W = rng.normal(0, 0.1, (2, EMBED_DIM + CHAR_DIM + 2)).astype(np.float32)
    extra = {"words_features": WORD_FEATURES, "words_weight": 2.0} if words else {}
    return Head({"format": 1, "feature_version": FEATURE_VERSION, "name": "toy", "question_hash": "abc",
                 "type": "noul", "labels": ["true", "false"], "temperature": 1.5, "chars_weight": 1.0,
                 **extra, **meta}, W, np.array(bias, np.float32),
                W_words=rng.normal(0, 0.5, (2, WORD_DIM)).astype(np.float32) if words else None)


def inputs(text: str):
    rng = np.random.default_rng(2)
    emb = rng.normal(size=EMBED_DIM).astype(np.float32)
    return emb / np.linalg.norm(emb), char_features(text), np.array([3.0, -1.0], np.float32)


TEXT = "Fix the failing test in tests/test_api.py: `login()` returns 500 when the password is empty."


def test_a_head_without_the_words_block_loads_and_answers_as_before(tmp_path):
    head = toy(words=False)
    head.save(tmp_path / "old.npz")
    with np.load(tmp_path / "old.npz") as data:
        assert "W_words" not in data.files  # the file has the shape it always had
    back = Head.load(tmp_path / "old.npz")
    assert back.W_words is None and back.words_weight == 0.0
    assert back.meta["checksum"] == heads.checksum(head.W, head.b)  # the checksum it always had
    emb, chars, sims = inputs(TEXT)
    by_hand = head.W[:, :EMBED_DIM] @ emb + head.W[:, EMBED_DIM + CHAR_DIM:] @ sims + head.b \
        + head.W[:, EMBED_DIM + chars[0]] @ chars[1]
    assert np.allclose(back.logits(emb, chars, sims), by_hand, atol=1e-5)
    # the words features, if computed for another head, are ignored by this one
    assert np.allclose(back.probs(emb, chars, sims, word_features(TEXT)), back.probs(emb, chars, sims))


def test_a_head_with_the_words_block_round_trips_and_reads_it(tmp_path):
    head = toy(words=True)
    head.save(tmp_path / "new.npz")
    back = Head.load(tmp_path / "new.npz")
    assert back.W_words is not None and np.array_equal(back.W_words, head.W_words) and back.words_weight == 2.0
    emb, chars, sims = inputs(TEXT)
    words = word_features(TEXT)
    without = toy(words=False)
    expected = without.logits(emb, chars, sims) + 2.0 * (head.W_words[:, words[0]] @ words[1])
    assert np.allclose(back.logits(emb, chars, sims, words), expected, atol=1e-5)
    with pytest.raises(ValueError, match="words block"):
        back.probs(emb, chars, sims)  # never silently without the block it was fitted with


def _resave(path, **arrays):
    with np.load(path) as data:
        members = {k: data[k] for k in data.files}
    members.update(arrays)
    np.savez(path, **members)


def test_a_words_block_of_another_version_shape_or_checksum_is_refused(tmp_path):
    toy(words=True, words_features="words@0").save(tmp_path / "a.npz")
    with pytest.raises(heads.HeadError, match="words block"):
        Head.load(tmp_path / "a.npz")
    toy(words=True).save(tmp_path / "b.npz")
    with np.load(tmp_path / "b.npz") as data:
        W_words = data["W_words"]
    _resave(tmp_path / "b.npz", W_words=W_words[:, :100])
    with pytest.raises(heads.HeadError, match="do not fit"):
        Head.load(tmp_path / "b.npz")
    toy(words=True).save(tmp_path / "c.npz")
    changed = W_words.copy()
    changed[0, 7] += 1.0
    _resave(tmp_path / "c.npz", W_words=changed)
    with pytest.raises(heads.HeadError, match="checksum"):
        Head.load(tmp_path / "c.npz")
    # metadata naming a block the file lacks
    lacking = toy(words=False, words_features=WORD_FEATURES, words_weight=1.0)
    lacking.save(tmp_path / "d.npz")
    with pytest.raises(heads.HeadError, match="lacks"):
        Head.load(tmp_path / "d.npz")


def test_word_features_are_hashed_grams_plus_structure():
    idx, val = word_features("How does the cache expire?\n## Notes\n- see src/cache.py\n```py\nx = 1\n```")
    base = WORD_DIM - len(STRUCT)
    struct = dict(zip(STRUCT, val[idx >= base], strict=False))
    assert struct["asks"] == 1 and struct["question"] == 1 and struct["fence"] == 1 and struct["path"] == 1
    assert struct["edit_verb"] == 0 and struct["bias"] == 1
    grams = val[idx < base]
    assert abs(np.linalg.norm(grams) - 1) < 1e-5 and (idx < WORD_DIM).all()
    assert dict(zip(STRUCT, word_features("Refactor the parser")[1][-len(STRUCT):], strict=False))["edit_verb"] == 1
    empty_idx, empty_val = word_features("")
    assert len(empty_idx) == len(STRUCT) and empty_val[-1] == 1  # structure only, no grams
    # deterministic across processes (crc32, not Python's salted hash)
    assert np.array_equal(word_features(TEXT)[0], word_features(TEXT)[0])


def test_inference_matches_the_fit_and_a_user_head_without_words_still_fits():
    """A head fitted with the words block answers, text by text, what fit.head_probs computed at
    training time; teach's grid (no words) still makes a head of the earlier shape."""
    rng = np.random.default_rng(0)
    edit = ["fix the bug in {}", "add a test for {}", "implement {} please", "refactor {} into two modules"]
    ask = ["what does {} do?", "explain how {} works", "why is {} slow?", "where is {} defined?"]
    things = ["parser", "login", "cache", "router", "the CLI", "billing", "search", "upload"]
    texts, y = [], []
    for i in range(48):
        kind = i % 2
        texts.append(rng.choice(edit if kind else ask).format(rng.choice(things)))
        y.append(kind)
    y = np.array(y)

    def embed(batch):  # a stand-in embedding: deterministic per text, no model needed
        out = np.array([np.random.default_rng(sum(map(ord, t))).normal(size=EMBED_DIM) for t in batch], np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    X = fit.featurize(texts, embed, ["yes", "no"], words=True)
    head = fit.fit_head(X, y, ["true", "false"], {"name": "w", "question_hash": "h", "type": "noul"},
                        k=3, grid=((1.0,), (4.0,)), words=(1.0,))
    assert head.W_words is not None and head.meta["words_features"] == WORD_FEATURES
    trained = fit.head_probs(X, head)
    options = embed(["yes", "no"])
    for i, text in enumerate(texts):
        e = embed([text])[0]
        p = head.probs(e, char_features(text), heads.similarities(e, options), word_features(text))
        assert np.allclose(p, trained[i], atol=1e-4)
    plain = fit.fit_head(fit.featurize(texts, embed, ["yes", "no"]), y, ["true", "false"],
                         {"name": "p", "question_hash": "h", "type": "noul"}, k=3, grid=fit.TEACH_GRID)
    assert plain.W_words is None and "words_features" not in plain.meta


def test_an_adapted_head_keeps_its_base_heads_words_block(tmp_path):
    base = toy(words=True)
    texts = [f"please fix bug number {i} in module {i % 5}" if i % 2 else f"what is module {i % 5} for?"
             for i in range(40)]
    y = np.array([i % 2 for i in range(40)])

    def embed(batch):
        return np.tile(np.eye(EMBED_DIM, dtype=np.float32)[0], (len(batch), 1))

    X = fit.featurize(texts, embed, ["yes", "no"], words=True)
    adapted = fit.fit_adapted_head(X, y, base, {"name": "a", "question_hash": "abc", "type": "noul"})
    assert adapted.W_words is not None and adapted.words_weight == base.words_weight
    adapted.save(tmp_path / "a.npz")
    back = Head.load(tmp_path / "a.npz")
    e = embed(["x"])[0]
    sims = heads.similarities(e, embed(["yes", "no"]))
    for text, p in zip(texts[:5], fit.head_probs(X, back)[:5], strict=True):
        assert np.allclose(back.probs(e, char_features(text), sims, word_features(text)), p, atol=1e-4)


def test_the_words_block_costs_under_a_millisecond_for_a_typical_prompt():
    prompt = ("Review the changes on this branch against main. Look for bugs, missing tests and security "
              "problems in src/api/handlers.py and src/db/models.py; report findings as a list, do not edit "
              "any file.\n\n## Context\n- the login flow was rewritten\n- see the failing CI run\n") * 2
    head = toy(words=True)
    emb, chars, sims = inputs(prompt)
    times = []
    for _ in range(50):
        t = time.perf_counter()
        head.probs(emb, chars, sims, word_features(prompt))
        times.append(time.perf_counter() - t)
    # ~0.3 ms on a quiet 2-core machine (docs/studies/routing-reader.md); the bound leaves room for CI load
    assert np.median(times) < 0.005


def test_the_engine_feeds_a_words_head_its_block(tmp_path, monkeypatch):
    provider = EmbeddedProvider("embedded", {"tier": "fast"})
    provider.warm()
    try:
        from system1_gateway.model.requests import parse_judge

        q = parse_judge({"state": "x", "questions": {"q": {"builtin": "read_only"}}}).questions["q"]
        head = toy(words=True, question_hash=q.wording_hash())
        head.save(tmp_path / "h.npz")
        head = Head.load(tmp_path / "h.npz")
        monkeypatch.setattr(provider, "head_store", lambda: type("S", (), {"find": lambda self, _q: head})())
        (answer,) = provider._head_answers([q], TEXT)
        engine = provider._fast_engine()
        e = engine.embed_mix([TEXT])[0]
        expected = head.probs(e, char_features(TEXT),
                              heads.similarities(e, engine.options(heads.option_texts(q))), word_features(TEXT))
        assert answer[0] is head and np.allclose(answer[1], expected, atol=1e-5)
    finally:
        provider.close()
