"""Built-in answers in bulk: `judge --jsonl` and `bulk` compute a chunk's fast-tier
embeddings in a few batched encoder runs, then answer every request through the normal path.

The answers must be the ones each request gets alone (up to float rounding), in input order,
with a bad line answered by its own error, and the batch's embeddings dropped after each chunk.
The fast tier (MiniLM) is loaded for real.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT
from system1_gateway import cli
from system1_gateway.bulk import chunks
from system1_gateway.bulk.worker import Worker
from system1_gateway.config.settings import Config, GatewaySettings, load_config
from system1_gateway.core.gateway import Gateway
from system1_gateway.providers.embedded.fast import FastEngine

ROUTING = ("read_only", "design", "review", "specified")
HEADS = ROOT / "data" / "heads"
# On p_true: the same arithmetic in batches of another shape (or on another thread count) differs by
# ~1e-7, and answers are rounded to 6 decimals, so two such answers can round one unit apart.
TOLERANCE = 1.5e-6


def _spread(texts: list[str], n: int) -> list[str]:
    """n texts spread over the length range (the shortest and the longest included)."""
    ordered = sorted(set(texts), key=len)
    return [ordered[round(i * (len(ordered) - 1) / (n - 1))] for i in range(n)]


def _states(pattern: str) -> list[str]:
    return [json.loads(line)["state"] for path in sorted(HEADS.glob(pattern))
            for line in path.read_text().splitlines() if line.strip()]


def mixed_requests(n_prompts: int = 30, n_commands: int = 30) -> list[dict]:
    """Real prompts asked the four routing built-ins, commands asked `destructive`, interleaved."""
    prompts = [{"state": s, "questions": {name: {"builtin": name} for name in ROUTING}}
               for s in _spread(_states("prompts-real-*/examples.jsonl"), n_prompts)]
    commands = [{"state": s, "questions": {"q": {"builtin": "destructive"}}}
                for s in _spread(_states("commands-*/examples.jsonl"), n_commands)]
    out = [r for pair in zip(prompts, commands, strict=False) for r in pair]
    return [r | {"request_id": f"r{i}"} for i, r in enumerate(out)]


@pytest.fixture(autouse=True)
def generous_deadline(monkeypatch):
    """What is compared is the answers, not the speed: a loaded machine (a CI worker beside
    another one) must not turn an answer into a timeout on one side of a comparison only."""
    monkeypatch.setenv("SYSTEM1_TIMEOUT_S", "120")
    monkeypatch.setenv("SYSTEM1_DEADLINE_S", "150")


def same_answers(a: dict, b: dict) -> None:
    """Equal results but for latency; p_true and other probabilities up to TOLERANCE."""
    assert a["status"] == b["status"] and a["request_id"] == b["request_id"] and a["error"] == b["error"]
    assert a["answers"].keys() == b["answers"].keys()
    for qid, x in a["answers"].items():
        y = b["answers"][qid]
        assert x.keys() == y.keys(), qid
        for key, value in x.items():
            if isinstance(value, float):
                assert abs(value - y[key]) <= TOLERANCE, (a["request_id"], qid, key, value, y[key])
            elif key == "probabilities":
                assert all(abs(value[k] - y[key][k]) <= TOLERANCE for k in value)
            elif key != "rationale":  # its two-decimal figures may round apart at a boundary
                assert value == y[key], (a["request_id"], qid, key)


def test_prefetched_embeddings_are_each_texts_own(fast_provider, monkeypatch):
    """Every reading of texts from one word to several windows, computed in sorted batches,
    equals what the engine computes for the text alone; a lookup then runs no model."""
    engine: FastEngine = fast_provider._fast_engine()
    texts = ["", "(no text)", "git status", *_spread(_states("prompts-real-*/examples.jsonl"), 12)]
    assert max(len(t) for t in texts) > 4000  # several windows
    kept = engine.prefetch({"first": texts, "whole": texts[::2], "mix": texts})
    assert kept == 2 * len(texts) + len(texts[::2])
    alone = {reading: {t: getattr(engine, method)([t])[0] for t in texts}
             for reading, method in (("first", "embed"), ("whole", "embed_whole"), ("mix", "embed_mix"))}
    for method in ("embed", "embed_whole", "embed_mix"):
        monkeypatch.setattr(engine, method, lambda _texts: pytest.fail("ran the model for a prefetched text"))
    for reading, wanted in (("first", texts), ("whole", texts[::2]), ("mix", texts)):
        for text in wanted:
            assert np.abs(engine.read(reading, [text])[0] - alone[reading][text]).max() < 1e-5, (reading, text[:40])
    engine.forget()
    assert engine._prefetched == {}


def test_a_batch_answers_exactly_as_one_request_at_a_time(fast_provider, monkeypatch):
    """60 mixed requests (routing built-ins over real prompts, `destructive` over commands read
    in parts): one by one, then with the chunk prefetched; the same answers, and the second
    pass ran the encoder only in the prefetch."""
    gateway = Gateway(Config(gateway=GatewaySettings(provider="embedded")), providers={"embedded": fast_provider},
                      record=False)
    payloads = mixed_requests()
    alone = [gateway.judge(p) for p in payloads]
    engine = fast_provider._fast_engine()
    assert gateway.prefetch(payloads) > len(payloads) // 2
    runs = []
    for method in ("embed", "embed_whole", "embed_mix"):
        monkeypatch.setattr(engine, method, lambda texts, m=method, f=getattr(engine, method): runs.append(m) or f(texts))
    batched = [gateway.judge(p) for p in payloads]
    gateway.forget()
    assert runs == []  # every embedding the answers read was computed ahead
    assert engine._prefetched == {}
    for a, b in zip(alone, batched, strict=True):
        same_answers(a, b)
    assert all(r["status"] == "answered" for r in batched)
    assert any(r["answers"]["q"]["p_true"] > 0.5 for r in batched[1::2])


def test_a_failed_prefetch_only_costs_time(fast_provider, monkeypatch):
    gateway = Gateway(Config(gateway=GatewaySettings(provider="embedded")), providers={"embedded": fast_provider},
                      record=False)
    payloads = mixed_requests(2, 2)
    monkeypatch.setattr(fast_provider._fast_engine(), "prefetch", lambda wanted: 1 / 0)
    assert gateway.prefetch(payloads) == 0
    assert all(gateway.judge(p)["status"] == "answered" for p in payloads)


def _cli_lines(tmp_path: Path, monkeypatch, capsys, lines: list[str], *flags: str) -> list[dict]:
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    code = cli.main(["judge", "--jsonl", *flags, str(source)])
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert code == 2  # the bad lines
    return out


def test_judge_jsonl_batches_in_bounded_chunks_in_input_order(tmp_path, monkeypatch, capsys):
    """Chunks of BATCH_LINES (8 here): a bad line mid-chunk gets its own error and the others
    are answered, in input order, as --no-batch answers them; each chunk's embeddings are
    computed in one prefetch and dropped before the next chunk."""
    monkeypatch.setattr(cli, "BATCH_LINES", 8)
    requests = mixed_requests(9, 9)
    lines = [json.dumps(r) for r in requests]
    lines[4] = "{broken"
    lines[11] = json.dumps({"state": "no questions"})
    lines.insert(6, "")
    sizes, left = [], []
    prefetch, forget = FastEngine.prefetch, FastEngine.forget

    def spy_prefetch(self, wanted):
        sizes.append(len(set().union(*wanted.values())))
        return prefetch(self, wanted)

    def spy_forget(self):
        forget(self)
        left.append(len(self._prefetched))
    monkeypatch.setattr(FastEngine, "prefetch", spy_prefetch)
    monkeypatch.setattr(FastEngine, "forget", spy_forget)
    batched = _cli_lines(tmp_path, monkeypatch, capsys, lines)
    # 18 requests in chunks of 8: the first chunk's first line goes alone (it finds there is no
    # daemon), then one prefetch per chunk, each dropped when its chunk is done
    assert len(sizes) == 3 and min(sizes) > 0 and left == [0, 0, 0]
    assert len(batched) == len(requests)
    assert [r["request_id"] for i, r in enumerate(batched) if i not in (4, 11)] == \
        [r["request_id"] for i, r in enumerate(requests) if i not in (4, 11)]
    assert "line 5: invalid JSON" in batched[4]["error"]["message"]
    assert batched[11]["error"]["message"].startswith("line 13: questions: required")
    assert sum(r["status"] == "answered" for r in batched) == len(requests) - 2
    alone = _cli_lines(tmp_path, monkeypatch, capsys, lines, "--no-batch")
    assert len(sizes) == 3  # --no-batch computed nothing ahead
    for a, b in zip(alone, batched, strict=True):
        if a["status"] == "answered":
            same_answers(a, b)
        else:
            assert a["error"] == b["error"]


def test_chunks_hand_over_what_has_arrived_and_number_every_line():
    import io

    stream = io.BufferedReader(io.BytesIO(b'{"a": 1}\n\n  \n{"b": 2}\n{"c": 3}'))
    got = list(cli._chunks(stream, 2))
    assert got == [[(1, b'{"a": 1}\n'), (4, b'{"b": 2}\n')], [(5, b'{"c": 3}')]]


def test_bulk_worker_batches_its_rows_with_per_line_errors(tmp_path, monkeypatch):
    """A bulk batch: rows in groups of BATCH_ROWS (5 here), each prefetched, every answer the
    one-at-a-time one, a bad row answered by its own error."""
    from system1_gateway.bulk import worker as worker_module

    monkeypatch.setattr(worker_module, "BATCH_ROWS", 5)
    requests = mixed_requests(6, 6)
    lines = [json.dumps(r) for r in requests]
    lines[3] = "not json"
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n")
    worker = Worker(load_config(), None)
    try:
        (chunk,) = chunks.plan(source, 100)
        done = worker.judge(source, chunk)
        results = [json.loads(line) for line in done["text"].splitlines()]
        assert done["rows"] == len(requests) and done["codes"] == {"ok": len(requests) - 1, "invalid_request": 1}
        assert "line 4: invalid JSON" in results[3]["error"]["message"]
        provider = worker.gateway.rung(worker.gateway.chain()[0])
        assert provider._fast_engine()._prefetched == {}
        for i, (request, result) in enumerate(zip(requests, results, strict=True)):
            if i != 3:
                same_answers(worker.gateway.judge(request), result)
    finally:
        worker.close()
