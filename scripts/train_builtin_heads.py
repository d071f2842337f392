"""Trains the shipped heads of the built-in questions from `data/heads/`, and measures them.

    python scripts/train_builtin_heads.py [--write] [--zero-shot data/heads/dev/zero_shot.json]

Data (provenance in each folder's README): `dev/dev_builtins.jsonl` (the project's labelled
dev items of these five tasks) and our own sets (`commands-*` for destructive, `prompts-*`
for the four routing questions), deduplicated against dev and against each other.

Measured honestly: 5-fold cross-validation over the dev items, each fold's
head trained on the other dev folds plus all of our own data, its hyper-parameters and
temperature chosen inside that training set (nested). The cascade's bar is chosen on four
folds' held-out answers and applied to the fifth (cross-fitted). The shipped head is then
trained on everything. `--write` writes `src/.../heads_shipped/<name>.npz` and
`data/heads/metrics.json`; without it, this only measures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

from system1_gateway.learn import fit, metrics
from system1_gateway.model import builtins
from system1_gateway.model.requests import parse_judge
from system1_gateway.providers.embedded import usable_cpus
from system1_gateway.providers.embedded.fast import FastEngine
from system1_gateway.providers.embedded.heads import FEATURE_VERSION, READINGS, option_texts, reader

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "heads"
# The checkout's copy (the suite tests the installed wheel, so the imported package's own
# folder would be site-packages): rebuild and reinstall the wheel after --write.
SHIPPED_DIR = ROOT / "src" / "system1_gateway" / "providers" / "embedded" / "heads_shipped"
SOURCES = {"destructive": ["commands-written", "commands-thirdparty", "commands-adversarial", "commands-parts",
                           "commands-everyday"],
           **{t: ["prompts-written-a", "prompts-written-b", "prompts-thirdparty"]
              for t in ("read_only", "design", "review", "specified")}}
TASKS = list(SOURCES)
ROUTING = ("read_only", "design", "review", "specified")
# Real prompts people wrote for coding agents, one folder per kind of source; each row names
# its repository. A stable quarter of the repositories is held out: never trained or tuned on
# (scripts/routing_study.py scores it), so the shipped heads' figures on it are honest.
REAL_HELD_OUT = 0.25
REAL_WEIGHT = 1.0  # a real prompt's weight in the fit: 2-3 gained 0.01-0.02 on real text and cost the dev items 0.01-0.03 (docs/studies/routing-real.md)


# Labelled by what the agent then did, not by LABELLING.md's reading of the question: a reader
# agrees on 80 % (on 66 % of its "only read" rows), so it would teach the heads the agents'
# habits, not the question (trained on, it cost read_only 6 of the 138 reader-labelled held-out
# prompts: docs/studies/routing-reader.md). Kept out of training; scored on its own.
OUTCOME_LABELLED = ("prompts-real-outcomes",)


def real_sources(outcomes: bool = False) -> list[str]:
    """The reader-labelled real sources, or (`outcomes`) the outcome-labelled ones."""
    return sorted(p.name for p in DATA.glob("prompts-real-*")
                  if (p / "examples.jsonl").is_file() and (p.name in OUTCOME_LABELLED) == outcomes)


def real_held_out(repo: str) -> bool:
    import hashlib

    return int(hashlib.sha256(repo.lower().encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < REAL_HELD_OUT


def _rows(source: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / source / "examples.jsonl").read_text().splitlines() if line.strip()]


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s/.-]", " ", text.lower())).strip()


def grams(text: str) -> set[str]:
    t = norm(text)
    return {t[i:i + 5] for i in range(max(1, len(t) - 4))}


def held_out(state: str, fraction: float) -> bool:
    """A stable split of our own data: the same items are held out on every run."""
    import hashlib

    return fraction > 0 and int(hashlib.sha256(norm(state).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < fraction


def load(task: str, holdout: float = 0.0, real: bool = True,
         own_sources: bool = True) -> tuple[list[dict], list[dict], dict]:
    """(dev items, own items after deduplication, counts of what was dropped and why). For a
    routing question "own" includes the real prompts of the training repositories (`real`)."""
    dev = [json.loads(line) for line in (DATA / "dev" / "dev_builtins.jsonl").read_text().splitlines()
           if line.strip() and json.loads(line)["task"] == task]
    canonical = builtins.BUILTINS[task].question()
    earlier = [b.question() for b in builtins.EARLIER if b.name == task]
    if dev and all(d["question"] in earlier for d in dev):
        # dev items labelled for an earlier version: relabelled for this one (data/heads/dev/<id>.json)
        relabel = json.loads((DATA / "dev" / f"{task}@{builtins.BUILTINS[task].version}.json").read_text())["relabel"]
        dev = [{**d, "question": canonical, "expected": relabel.get(d["id"], d["expected"]), "relabelled": True}
               for d in dev]
    assert all(d["question"] == canonical for d in dev), f"{task}: dev wording differs from builtins.py"
    dev_norm = {norm(d["state"]) for d in dev}
    dev_grams = [grams(d["state"]) for d in dev]
    seen: dict[str, dict] = {}
    dropped = {"same_as_dev": 0, "near_dev": 0, "repeated": 0, "conflicting": 0}
    sources = (SOURCES[task] if own_sources else []) + (real_sources() if real and task in ROUTING else [])
    for source in sources:
        for item in _rows(source):
            if task not in item:  # a source may label only some questions (prompts-real-outcomes)
                continue
            if "repo" in item and real_held_out(item["repo"]):
                continue
            if held_out(item["state"], holdout):
                continue
            key = norm(item["state"])
            if key in dev_norm:
                dropped["same_as_dev"] += 1
                continue
            g = grams(item["state"])
            if any(len(g & d) / max(1, len(g | d)) >= 0.8 for d in dev_grams):
                dropped["near_dev"] += 1
                continue
            row = {"state": item["state"], "expected": bool(item[task]), "source": source}
            if key in seen:
                if seen[key]["expected"] != row["expected"]:
                    seen[key]["conflict"] = True
                    dropped["conflicting"] += 1
                else:
                    dropped["repeated"] += 1
                continue
            seen[key] = row
    own = [r for r in seen.values() if not r.get("conflict")]
    return dev, own, dropped


def real_test(task: str, outcomes: bool = False) -> list[dict]:
    """The real prompts of the held-out repositories, minus any with a near-duplicate among the
    dev items or the training data (the same 80 % 5-gram rule). `outcomes`: the
    outcome-labelled prompts instead, every repository (none is trained on)."""
    dev, train, _ = load(task)
    known = [grams(d["state"]) for d in dev + train]
    known_norm = {norm(d["state"]) for d in dev + train}
    out, seen = [], set()
    for source in real_sources(outcomes):
        for item in _rows(source):
            if task not in item or (not outcomes and not real_held_out(item["repo"])) \
                    or norm(item["state"]) in known_norm | seen:
                continue
            g = grams(item["state"])
            if any(len(g & k) / max(1, len(g | k)) >= 0.8 for k in known):
                continue
            seen.add(norm(item["state"]))
            out.append({"state": item["state"], "expected": bool(item[task]), "source": source, "repo": item["repo"]})
    return out


class EmbeddingCache:
    """MiniLM embeddings (first window, whole text) per text, kept on disk (`--embed-cache`) so that a
    rerun or another script (reader_study.py) never computes one twice; mix = their normalised sum,
    which is FastEngine.embed_mix."""

    def __init__(self, folder: Path, threads: int = 1):
        self.path = folder / "minilm-windows.npz"
        folder.mkdir(parents=True, exist_ok=True)
        self.first: dict[str, np.ndarray] = {}
        self.whole: dict[str, np.ndarray] = {}
        if self.path.exists():
            with np.load(self.path) as data:
                for k, a, b in zip(data["keys"], data["first"], data["whole"], strict=True):
                    self.first[str(k)], self.whole[str(k)] = a, b
        self.threads = threads
        self._engine = None

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def fill(self, texts: list[str]) -> None:
        todo = [t for t in dict.fromkeys(texts) if self.key(t) not in self.first]
        if not todo:
            return
        if self._engine is None:
            self._engine = FastEngine(self.threads)
        t0 = time.perf_counter()
        for start in range(0, len(todo), 8):
            part = todo[start:start + 8]
            first, whole = self._engine._windows(part)
            for t, a, b in zip(part, first, whole, strict=True):
                self.first[self.key(t)], self.whole[self.key(t)] = a.astype(np.float32), b.astype(np.float32)
            if start % 200 == 0:
                print(f"  embedded {start + len(part)}/{len(todo)} ({time.perf_counter() - t0:.0f} s)", flush=True)
                self.save()
        self.save()

    def save(self) -> None:
        keys = list(self.first)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(keys), first=np.vstack([self.first[k] for k in keys]),
                 whole=np.vstack([self.whole[k] for k in keys]))
        tmp.replace(self.path)

    def mix(self, texts: list[str]) -> np.ndarray:
        self.fill(texts)
        m = np.vstack([self.first[self.key(t)] + self.whole[self.key(t)] for t in texts])
        return m / np.linalg.norm(m, axis=1, keepdims=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="write the shipped heads and data/heads/metrics.json")
    ap.add_argument("--zero-shot", type=Path, default=DATA / "dev" / "zero_shot.json",
                    help="the accurate tier's zero-shot answers to the dev items (benchmarks/heads_zero_shot.py)")
    ap.add_argument("--tasks", nargs="+", default=TASKS, choices=TASKS)
    ap.add_argument("--holdout", type=float, default=0.0, metavar="F",
                    help="leave out this fraction of our own data (a stable hash split) and write those items to "
                         "--heads-dir/<task>.holdout.jsonl: a held-out set for benchmarks/guard.py")
    ap.add_argument("--heads-dir", type=Path, metavar="DIR",
                    help="write the heads here as user heads (<question hash>.npz) instead of the shipped ones")
    ap.add_argument("--embed-cache", type=Path, metavar="DIR",
                    help="keep the texts' embeddings in DIR and read them back on the next run (the mix reading)")
    ap.add_argument("--no-words", action="store_true",
                    help="routing heads without the words block (as before 0.4.0)")
    args = ap.parse_args()
    zs = json.loads(args.zero_shot.read_text())["items"] if args.zero_shot.exists() else {}
    assert READINGS[FEATURE_VERSION] == "mix"
    # the reading new heads are made for: FastEngine.embed_mix, or the same vectors from the cache
    embed = (EmbeddingCache(args.embed_cache, 1).mix if args.embed_cache
             else reader(FastEngine(usable_cpus()), READINGS[FEATURE_VERSION]))
    report: dict = {}
    pooled: list = []
    print(f"{'question':<12} {'dev':>4} {'own':>5} {'zero-shot':>10} {'head cv':>8} {'ECE':>6} "
          f"{'cascade cv':>10} {'escal.':>6} {'zs ECE':>7}")
    for task in args.tasks:
        t0 = time.perf_counter()
        b = builtins.BUILTINS[task]
        dev, own, dropped = load(task, args.holdout)
        if args.holdout and args.heads_dir:
            args.heads_dir.mkdir(parents=True, exist_ok=True)
            with open(args.heads_dir / f"{task}.holdout.jsonl", "w") as out:
                for source in SOURCES[task]:
                    for line in (DATA / source / "examples.jsonl").read_text().splitlines():
                        if line.strip() and held_out(json.loads(line)["state"], args.holdout):
                            out.write(line + "\n")
        y_dev = np.array([0 if d["expected"] else 1 for d in dev])
        y_own = np.array([0 if d["expected"] else 1 for d in own])
        options = option_texts(parse_judge({"state": "", "questions": {"q": b.question()}}).questions["q"])
        # The routing heads read the words block too (docs/studies/routing-reader.md); destructive does not.
        words = task in ROUTING and not args.no_words
        grid, wgrid = (fit.WORDS_GRID, fit.WORDS_WEIGHTS) if words else ((fit.CHARS_WEIGHTS, fit.CS), (0.0,))
        X_dev = fit.featurize([d["state"] for d in dev], embed, options, words=words)
        X_own = fit.featurize([d["state"] for d in own], embed, options, words=words)
        real = np.array([d["source"].startswith("prompts-real-") for d in own], bool)
        if real.any():  # real prompts weigh more than written ones, as the study chose
            X_own.weight = np.where(real, REAL_WEIGHT, 1.0)
        raw, cal = fit.cross_validate(X_dev, y_dev, 2, k=5, extra=X_own, extra_y=y_own, grid=grid, words=wgrid)
        entry = {"dev": len(dev), "own": len(own), "own_by_source": _by_source(own), "dropped": dropped,
                 "head_cv": metrics.summary(cal, y_dev), "head_cv_uncalibrated": metrics.summary(raw, y_dev)}
        # the zero-shot answers were to the dev items' own wording: not to a relabelled version's
        llm = (np.array([zs[d["id"]] for d in dev]) if all(d["id"] in zs for d in dev) and zs
               and not any(d.get("relabelled") for d in dev) else None)
        cascade = {"below": 0.0, "head_weight": 0.5}
        if llm is not None:
            entry["zero_shot"] = metrics.summary(llm, y_dev)
            casc_probs, asked = fit.cross_fitted_cascade(cal, llm, y_dev)
            entry["cascade_cv"] = {**metrics.summary(casc_probs, y_dev), "escalated": round(float(asked.mean()), 3)}
            # Shipped only when it wins clearly on held-out folds, not merely in-sample.
            if fit.cascade_pays(entry["head_cv"]["accuracy"], entry["cascade_cv"]["accuracy"], len(y_dev)):
                chosen = fit.choose_cascade(cal, llm, y_dev)
                cascade = {"below": chosen["below"], "head_weight": chosen["head_weight"]}
            entry["cascade"] = cascade
        X_all = fit.Features.join(X_dev, X_own)
        y_all = np.concatenate([y_dev, y_own])
        texts = [d["state"] for d in dev] + [d["state"] for d in own]
        # The temperature is fitted on the real prompts' out-of-fold answers where there are
        # some: the confidence is honest on the text the head meets, not on the written sets.
        t_rows = len(dev) + np.flatnonzero(real) if real.any() else None
        head = fit.fit_head(X_all, y_all, ["true", "false"], temperature_rows=t_rows, grid=grid, words=wgrid, meta={
            "name": f"{b.name}@{b.version}", "question_hash": b.hash, "builtin": b.id, "type": b.type,
            "instructions": b.instructions, "cascade": cascade,
            "training": {"n": int(len(y_all)), "classes": np.bincount(y_all, minlength=2).tolist(),
                         "data_sha256": fit.data_hash([(t, "true" if v == 0 else "false") for t, v in zip(texts, y_all, strict=False)]),
                         "sources": {"dev": len(dev), **entry["own_by_source"]}},
            "metrics": {"protocol": "5-fold CV on dev; train = other dev folds + own data; nested selection",
                        "head": entry["head_cv"], "cascade": entry.get("cascade_cv"),
                        "zero_shot": entry.get("zero_shot")},
        })
        entry["temperature"], entry["chars_weight"], entry["C"] = head.temperature, head.meta["chars_weight"], head.meta["C"]
        if head.W_words is not None:
            entry["words_weight"] = head.words_weight
        entry["seconds"] = round(time.perf_counter() - t0, 1)
        report[task] = entry
        pooled.append((cal, y_dev))
        zsa = entry.get("zero_shot", {})
        cc = entry.get("cascade_cv", {})
        print(f"{task:<12} {len(dev):>4} {len(own):>5} {zsa.get('accuracy', float('nan')):>10.3f} "
              f"{entry['head_cv']['accuracy']:>8.3f} {entry['head_cv']['ece']:>6.3f} "
              f"{cc.get('accuracy', float('nan')):>10.3f} {cc.get('escalated', float('nan')):>6.2f} "
              f"{zsa.get('ece', float('nan')):>7.3f}", flush=True)
        if args.heads_dir:
            head.save(args.heads_dir / f"{b.hash}.npz")
        elif args.write:
            head.save(SHIPPED_DIR / f"{b.name}.npz", mode=0o644)  # package data: readable by all
    accs = [report[t]["head_cv"]["accuracy"] for t in args.tasks]
    all_p = np.vstack([p for p, _ in pooled])
    all_y = np.concatenate([y for _, y in pooled])
    report["_pooled"] = {"macro_accuracy": round(float(np.mean(accs)), 4), **metrics.summary(all_p, all_y)}
    print(f"macro head cv accuracy {np.mean(accs):.3f}; ECE pooled over the {len(all_y)} dev items "
          f"{metrics.ece(all_p, all_y):.3f}, mean of per-question ECE "
          f"{np.mean([report[t]['head_cv']['ece'] for t in args.tasks]):.3f}")
    if args.write and not args.heads_dir:
        path = DATA / "metrics.json"
        if set(args.tasks) != set(TASKS) and path.exists():  # some tasks retrained: keep the others' figures
            merged = json.loads(path.read_text())
            merged.update({t: report[t] for t in args.tasks})
            accs = [merged[t]["head_cv"]["accuracy"] for t in TASKS if t in merged]
            merged["_pooled"] = {**merged.get("_pooled", {}), "macro_accuracy": round(float(np.mean(accs)), 4),
                                 "note": "pooled ECE/Brier/NLL are from the last run that trained every task"}
            report = merged
        path.write_text(json.dumps(report, indent=1) + "\n")
    return 0


def _by_source(rows: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r["source"]] = out.get(r["source"], 0) + 1
    return out


if __name__ == "__main__":
    sys.exit(main())
