"""The calibration study (docs/studies/calibration.md): every figure there is printed here.

    python benchmarks/calibration_study.py collect [--out data/calibration/dev_raw.json]
    python benchmarks/calibration_study.py study [--raw data/calibration/dev_raw.json] [--png docs/studies]
    python benchmarks/calibration_study.py shipped [--raw …]   # the fits shipped in calibration.json

`collect` asks the embedded engine as installed (heads for the built-ins, the zero-shot tiers
for the rest; calibration off) every dev item, through the gateway, and saves each raw
answer with the model that gave it. The heads were trained on the dev items of the built-ins,
so their raw answers on dev are in-sample; for those five questions `study` uses instead the
heads' out-of-fold answers (each fold's head trained on the other folds plus our own data,
benchmarks/heads_study.py's nested procedure).

`study`, per task: 5-fold, a temperature fitted on four folds and applied to the fifth (ECE,
Brier, accuracy before and after, pooled over the held-out folds); and the threshold chosen on
four folds for ≥ 60 % coverage, its accuracy on the fifth.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "data" / "dev.jsonl"
RAW = ROOT / "data" / "calibration" / "dev_raw.json"
BUILTIN_TASKS = ("destructive", "read_only", "design", "review", "specified")


def collect(out: Path) -> None:
    from rich.console import Console

    from system1_gateway.learn import calibrate
    from system1_gateway.learn.labelled import read_labels

    groups, rejected = read_labels(DEV)
    assert not rejected, rejected
    ids = [json.loads(line)["id"] for line in DEV.read_text().splitlines() if line.strip()]
    rows = []
    by_key = {}
    for line in DEV.read_text().splitlines():
        item = json.loads(line)
        by_key.setdefault(json.dumps([item["state"], item["question"]], sort_keys=True), item)
    for g in groups.values():
        labels = calibrate._labels(g.question)
        question = g.question.model_dump(mode="json", exclude_none=True)
        for state, y in zip(g.states, g.y, strict=False):
            rows.append((state, question, labels[y], ",".join(sorted(g.names))))
    t0 = time.perf_counter()
    answers, errors = calibrate.raw_answers(rows, None, Console(stderr=True))
    lookup = {}
    for line in DEV.read_text().splitlines():
        item = json.loads(line)
        lookup.setdefault((item["task"], json.dumps(item["state"], sort_keys=True)), []).append(item["id"])
    for a in answers:
        state = rows[a["row"]][0]
        a["id"] = lookup[(a["name"], json.dumps(state, sort_keys=True))].pop(0)
        a["task"] = a.pop("name")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"source": "benchmarks/calibration_study.py collect", "items": answers,
                               "errors": errors, "seconds": round(time.perf_counter() - t0, 1),
                               "n_dev": len(ids)}, indent=0))
    print(f"{len(answers)} answers, {len(errors)} errors, {time.perf_counter() - t0:.0f} s → {out}")


def heads_out_of_fold() -> dict[str, np.ndarray]:
    """The built-in heads' out-of-fold probabilities on dev (as heads_study section 1)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import train_builtin_heads as training
    from heads_study import builtin_options
    from system1_gateway.learn import fit
    from system1_gateway.providers.embedded import usable_cpus
    from system1_gateway.providers.embedded.fast import FastEngine

    engine = FastEngine(usable_cpus())
    out = {}
    for task in BUILTIN_TASKS:
        dev, own, _ = training.load(task)
        y = np.array([0 if d["expected"] else 1 for d in dev])
        y_own = np.array([0 if d["expected"] else 1 for d in own])
        options = builtin_options(task)
        X = fit.featurize([d["state"] for d in dev], engine.embed, options)
        X_own = fit.featurize([d["state"] for d in own], engine.embed, options)
        _, cal = fit.cross_validate(X, y, 2, k=5, extra=X_own, extra_y=y_own)
        out[task] = (np.array([d["id"] for d in dev]), cal, y)
    return out


def ece_floor(probs: np.ndarray, draws: int = 500, seed: int = 0) -> float:
    """The ECE a *perfectly* calibrated engine shows with these confidences and this n (its
    answers right with probability = confidence): the sampling floor under which no fit can
    be told apart from noise. Mean over `draws` simulations."""
    from system1_gateway.learn import metrics

    rng = np.random.default_rng(seed)
    conf = probs.max(axis=1)
    top = probs.argmax(axis=1)
    other = (top + 1) % probs.shape[1]
    total = 0.0
    for _ in range(draws):
        y = np.where(rng.uniform(size=len(conf)) < conf, top, other)
        total += metrics.ece(probs, y)
    return total / draws


def _policy_fit(train: list[dict], pool: list[dict]) -> tuple[float, str]:
    """The layer's rule on a training fold: a per-question temperature when the question has
    ≥ 50 labels from this model, else the option-count fallback fitted on every question
    with that many options from this model (other tasks + this fold), else none (T = 1)."""
    from system1_gateway.core.calibration import MIN_LABELS
    from system1_gateway.learn import calibration_fit as cf

    for rows, scope in ((train, "question"), (pool, "options")):
        if len(rows) >= MIN_LABELS and len({r["y"] for r in rows}) > 1:
            return cf.fit_temperature(np.array([r["probs"] for r in rows]), np.array([r["y"] for r in rows])), scope
    return 1.0, "none"


def study(raw_path: Path, png: Path | None, target_coverage: float = 0.6) -> None:
    from system1_gateway.learn import calibration_fit as cf
    from system1_gateway.learn import metrics

    raw = json.loads(raw_path.read_text())["items"]
    heads = heads_out_of_fold()
    for ids, probs, _ in heads.values():  # the heads' out-of-fold answers replace the in-sample ones
        by_id = {a["id"]: a for a in raw}
        for i, p in zip(ids, probs, strict=False):
            by_id[i]["probs"] = p.tolist()
    tasks = sorted({a["task"] for a in raw})
    print("Embedded engine on the nine dev tasks, 5-fold: fits and thresholds chosen on 4 folds, scored on the 5th.")
    print("Fit rule as in the layer: per (model, question) with ≥ 50 labels, else per (model, option count) "
          "pooled with the other tasks, else none.")
    print(f"{'task':<12} {'n':>3} {'answered by':<22} | {'acc':>5} | {'ECE before':>10} {'after':>6} "
          f"{'floor':>6} | {'Brier before':>12} {'after':>6} | {'fits used':<22} | {'thr':>5} {'coverage':>8} "
          f"{'acc@thr':>7}")
    panels, all_raw, all_oof, all_y = [], [], [], []
    for task in tasks:
        items = [a for a in raw if a["task"] == task]
        probs = np.array([a["probs"] for a in items])
        y = np.array([a["y"] for a in items])
        models = sorted({a["model"] for a in items})
        source = "head (out-of-fold)" if task in heads else "zero-shot " + "/".join(
            "llm+fast" if "+" in m else "fast" for m in models)
        oof = np.empty_like(probs)
        kept = np.zeros(len(y), bool)
        scopes: dict[str, int] = {}
        for test in cf._folds(y, 5, 0):
            train_idx = np.setdiff1d(np.arange(len(y)), test)
            temps = {}
            for model in models:
                train = [items[i] for i in train_idx if items[i]["model"] == model]
                pool = train + [a for a in raw if a["task"] != task and a["model"] == model
                                and len(a["labels"]) == len(items[0]["labels"])]
                temps[model], scope = _policy_fit(train, pool)
                scopes[scope] = scopes.get(scope, 0) + 1
            cal = np.array([cf.apply_temperature(probs[i:i + 1], temps[items[i]["model"]])[0] for i in range(len(y))])
            bar = float(np.quantile(cal[train_idx].max(axis=1), 1 - target_coverage))  # ≥ 60 % of train kept
            oof[test] = cal[test]
            kept[test] = cal[test].max(axis=1) >= bar
        right = oof.argmax(axis=1) == y
        used = ", ".join(f"{k} ×{v}" for k, v in sorted(scopes.items()))
        print(f"{task:<12} {len(y):>3} {source:<22} | {metrics.accuracy(probs, y):>5.3f} | "
              f"{metrics.ece(probs, y):>10.3f} {metrics.ece(oof, y):>6.3f} {ece_floor(oof):>6.3f} | "
              f"{metrics.brier(probs, y):>12.3f} {metrics.brier(oof, y):>6.3f} | {used:<22} | "
              f"{bar:>5.2f} {kept.mean():>8.0%} {right[kept].mean():>7.3f}")
        panels.append((f"{task} ({source})", probs, oof, y))
        pad = lambda p: np.pad(p, ((0, 0), (0, 6 - p.shape[1])))  # noqa: E731 - pool tasks of any width
        all_raw.append(pad(probs))
        all_oof.append(pad(oof))
        all_y.append(y)
    P, Q, Y = np.vstack(all_raw), np.vstack(all_oof), np.concatenate(all_y)
    print(f"{'pooled':<12} {len(Y):>3} {'':<22} | {metrics.accuracy(P, Y):>5.3f} | {metrics.ece(P, Y):>10.3f} "
          f"{metrics.ece(Q, Y):>6.3f} {ece_floor(Q):>6.3f} | {metrics.brier(P, Y):>12.3f} {metrics.brier(Q, Y):>6.3f} |")
    if png:
        path = cf.reliability_png(panels, str(png / "calibration-reliability.png"))
        print(f"reliability and coverage–accuracy: {path}")


def shipped(raw_path: Path, write: Path | None) -> None:
    """Option-count fits for the zero-shot models (the questions without a head), fitted on
    every non-built-in dev task. Shipped only where the cross-fitted ECE improves, and as a
    temperature only: a threshold is the user's choice (calibrate fits one on their labels)."""
    from system1_gateway.learn import calibration_fit as cf

    raw = [a for a in json.loads(raw_path.read_text())["items"] if a["task"] not in BUILTIN_TASKS]
    groups: dict[tuple, cf.Group] = {}
    for a in raw:
        key = (a["model"], len(a["labels"]))
        g = groups.setdefault(key, cf.Group("embedded", a["model"], None, len(a["labels"]),
                                            f"embedded zero-shot, {len(a['labels'])} options"))
        g.probs.append(a["probs"])
        g.y.append(a["y"])
    records = []
    for g in groups.values():
        row = cf.fit_group(g, 0.9)
        if row.get("record") is None:
            print(f"{g.model[:50]:<50} options={g.options} n={row['n']}: {row['refused']}")
            continue
        better = row["after"]["ece"] < row["before"]["ece"]
        print(f"{g.model[:50]:<50} options={g.options} n={row['n']} T={row['temperature']} "
              f"cross-fitted ECE {row['before']['ece']} → {row['after']['ece']}: {'shipped' if better else 'not shipped'}")
        if better:
            record = row["record"].model_dump(exclude_none=True)
            for key in ("threshold", "target_accuracy", "accuracy_lower", "coverage"):
                record.pop(key, None)
            records.append(record)
    text = json.dumps({"format": 1, "fits": records}, indent=2) + "\n"
    if write:
        write.write_text(text)
        print(f"written: {write}")
    else:
        print(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["collect", "study", "shipped"])
    ap.add_argument("--out", type=Path, default=RAW)
    ap.add_argument("--raw", type=Path, default=RAW)
    ap.add_argument("--png", type=Path, default=ROOT / "docs" / "studies")
    ap.add_argument("--write", type=Path, help="shipped: write the fits here (src/system1_gateway/core/calibration.json)")
    args = ap.parse_args()
    if args.what == "collect":
        collect(args.out)
    elif args.what == "study":
        study(args.raw, args.png)
    else:
        shipped(args.raw, args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
