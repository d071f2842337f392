"""The rejected "joint" layout for several questions on one evidence, against the shipped
per-question prompts, on the four routing tasks of dev.jsonl (llm tier only, each corrected
by its definitions reference computed in its own layout).

    python benchmarks/embedded_joint.py [--variant A|B] [--limit N]

Joint: one prefix holding all four questions (numbered, with their options), the evidence
decoded once, then one short branch per question ("Question i:" or "i:") decoded in one
batch, each option scored by its first token. Per-question: the provider's prompts
(prompts.build), one decode per question. Prints per-task accuracy, macro and latency
(median / p95 per prompt) side by side. Every item of the four tasks is scored (72 prompts,
each labelled for 1–4 of the tasks). In-sample: dev is the development set.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from system1_gateway.model.render import render
from system1_gateway.model.requests import parse_judge
from system1_gateway.providers.embedded import assets, prompts
from system1_gateway.providers.embedded.llm import LlmEngine, cy
from system1_gateway.providers.embedded.prior import definitions

DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "dev.jsonl"
TASKS = ("read_only", "design", "review", "specified")
SYSTEM = ("You are a precise classifier for a coding agent. Read the questions and the text, apply the "
          "definitions literally, and answer each question with exactly one of its allowed options.")
FORMAT = {"A": ("", "Question {i}:"),
          "B": ("\n\nReply with one line per question: its number, a colon and one of its options.", "{i}:")}


def joint_prompt(questions: list, variant: str) -> tuple[prompts.Prompt, list[list[str]]]:
    blocks, options = [], []
    for i, q in enumerate(questions, 1):
        descs = [q.criteria["true"], q.criteria["false"]]
        heads = [render(d).split(":", 1)[0].strip() for d in descs]
        blocks.append("\n".join([f"Question {i}: {render(q.instructions)}", "Options:",
                                 *(f"- {render(d)}" for d in descs), "Answer with exactly one of: " + ", ".join(heads) + "."]))
        options.append(heads)
    text = "user\n" + "\n\n".join(blocks) + FORMAT[variant][0] + "\n\nText:\n"
    return prompts.Prompt(prompts.IM_START, f"system\n{SYSTEM}", prompts.IM_END, "\n", prompts.IM_START, text), options


def joint_answers(engine: LlmEngine, ptoks: list[int], slot_seq: int, evidence: str, options: list, variant: str) -> list:
    stoks = engine.encode(prompts.suffix(evidence))
    engine.ctx.memory_seq_rm(0, -1, -1)
    engine.ctx.memory_seq_cp(slot_seq, 0, -1, -1)
    engine._decode(stoks, 0, len(ptoks), want_last=False)
    start = len(ptoks) + len(stoks)
    branches = [engine.plain_tokens(FORMAT[variant][1].format(i=i)) for i in range(1, len(options) + 1)]
    batch = cy.LlamaBatch(n_tokens=sum(map(len, branches)), embd=0, n_seq_max=1)
    last, k = [], 0
    for seq, toks in zip(engine._branch_seqs, branches, strict=False):
        engine.ctx.memory_seq_rm(seq, -1, -1)
        engine.ctx.memory_seq_cp(0, seq, -1, -1)
        for j, tok in enumerate(toks):
            batch.add(tok, start + j, [seq], j == len(toks) - 1)
        k += len(toks)
        last.append(k - 1)
    engine.ctx.decode(batch)
    out = []
    for idx, opts in zip(last, options, strict=False):
        lp = np.asarray(engine.ctx.get_logits_ith(idx), dtype=np.float64)
        scores = np.array([np.logaddexp.reduce(lp[f]) for f in engine._first_tokens(tuple(opts))])
        p = np.exp(scores - scores.max())
        out.append(p / p.sum())
    for seq in engine._branch_seqs:
        engine.ctx.memory_seq_rm(seq, -1, -1)
    return out


def corrected(p: np.ndarray, ref: np.ndarray) -> np.ndarray:
    c = p / ref
    return c / c.sum()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", default="B", choices=sorted(FORMAT))
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
    rows = [json.loads(line) for line in DEV.read_text().splitlines() if line.strip()]
    raw = {t: next(r["question"] for r in rows if r["task"] == t) for t in TASKS}
    questions = list(parse_judge({"state": "s", "questions": raw}).questions.values())
    labels: dict[str, dict] = {}
    for r in rows:
        if r["task"] in TASKS:
            labels.setdefault(r["state"], {})[r["task"]] = r["expected"]
    items = list(labels.items())[: args.limit or None]

    engine = LlmEngine(str(assets.gguf_path()), 2, n_ctx=8192, n_slots=8, kv_dir=None)
    prefix, options = joint_prompt(questions, args.variant)
    ptoks = engine.encode(prefix)
    slot = engine._prefix_slot(ptoks)
    single = [prompts.build(q) for q in questions]

    def joint(evidence: str) -> list:
        return joint_answers(engine, ptoks, slot.seq, evidence, options, args.variant)

    def alone(evidence: str) -> list:
        return [engine.option_probs(p, prompts.suffix(evidence), o) for p, o in single]

    results = {}
    for name, ask in (("joint", joint), ("per-question", alone)):
        refs = [np.mean([ask(d)[i] for d in definitions(q)], axis=0) for i, q in enumerate(questions)]
        hits: dict[str, list[bool]] = {t: [] for t in TASKS}
        lat = []
        for state, lab in items:
            t0 = time.perf_counter()
            answers = ask(state)
            lat.append(time.perf_counter() - t0)
            for i, task in enumerate(TASKS):
                if task in lab:
                    hits[task].append(bool(corrected(answers[i], refs[i])[0] >= 0.5) == bool(lab[task]))
        results[name] = (hits, lat)
    print(f"joint variant {args.variant}: prefix {len(ptoks)} tokens; {len(items)} prompts; llm tier, corrected")
    print(f"{'layout':<14}" + "".join(f"{t:>11}" for t in TASKS) + f"{'macro':>8}{'p50 ms':>9}{'p95 ms':>9}")
    for name, (hits, lat) in results.items():
        acc = [sum(h) / len(h) for h in hits.values()]
        p95 = sorted(lat)[min(len(lat) - 1, int(0.95 * len(lat)))]
        print(f"{name:<14}" + "".join(f"{a:>11.3f}" for a in acc) + f"{statistics.mean(acc):>8.3f}"
              f"{statistics.median(lat) * 1000:>9.0f}{p95 * 1000:>9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
