"""The fast tier's ONNX thread pool: spin-waiting or not, on a quiet machine and with one core busy.

    python benchmarks/fast_threads.py [--rounds 40] [--gap-s 0.3]

all-MiniLM-L6-v2 (int8, the fast tier's model) on a 29-token prompt (a routing request) and a
256-token window (a long prompt, a batch of option descriptions), through three onnxruntime
sessions in one process: `spin` (onnxruntime's default, what the fast tier used before),
`no-spin` (`session.intra_op.allow_spinning = 0`, what it uses now), both with the usable CPUs as
intra-op threads, and `1 thread`. Each run follows a pause of `--gap-s` (a hook's request comes
after the engine sat idle). The "busy" rows run the same with a busy-loop process pinned to one
CPU (the agent, a build, a browser tab). Sessions and conditions are interleaved run by run.
Prints p50 / p95 per cell and no-spin / spin at p50.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from bench_stats import pct
from system1_gateway.providers.embedded.assets import TOKENIZER_PATH, minilm_onnx_path

PROMPT = "Explain how the retry logic in src/net/client.py decides when to give up on a request, turn 3"


def session(threads: int, spin: bool) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    return ort.InferenceSession(str(minilm_onnx_path()), opts, providers=["CPUExecutionProvider"])


def feed(ids: list[int]) -> dict[str, np.ndarray]:
    array = np.array([ids], np.int64)
    return {"input_ids": array, "attention_mask": np.ones_like(array), "token_type_ids": np.zeros_like(array)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--gap-s", type=float, default=0.3)
    a = parser.parse_args()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    short = tokenizer.encode(PROMPT).ids
    long = tokenizer.encode(PROMPT * 12).ids[:255] + [short[-1]]
    inputs = {f"{len(short)} tokens": feed(short), f"{len(long)} tokens": feed(long)}
    sessions = {"spin": session(cpus, True), "no-spin": session(cpus, False), "1 thread": session(1, False)}
    times: dict[tuple[str, str, str], list[float]] = {}
    for s in sessions.values():
        for f in inputs.values():
            s.run(None, f)
    hog = None
    try:
        for r in range(a.rounds):
            for condition in ("quiet", "busy") if r % 2 == 0 else ("busy", "quiet"):
                if condition == "busy" and hog is None:
                    hog = subprocess.Popen([sys.executable, "-c", "import os\nos.sched_setaffinity(0, {0})\nwhile 1: pass"])
                    time.sleep(0.2)
                if condition == "quiet" and hog is not None:
                    hog.kill()
                    hog.wait()
                    hog = None
                for name, s in sessions.items():
                    for label, f in inputs.items():
                        time.sleep(a.gap_s)
                        started = time.perf_counter()
                        s.run(None, f)
                        times.setdefault((condition, label, name), []).append((time.perf_counter() - started) * 1000)
    finally:
        if hog is not None:
            hog.kill()
    print(f"\nall-MiniLM-L6-v2 int8, onnxruntime {ort.__version__}, {cpus} usable CPUs, {a.rounds} runs per cell, "
          f"{a.gap_s:g} s idle before each (ms, p50 / p95)\n")
    print("| machine | input | spin (before) | no-spin (now) | 1 thread | no-spin / spin p50 |")
    print("|---|---|---|---|---|---|")
    for condition in ("quiet", "busy"):
        for label in inputs:
            cells = {}
            for name in sessions:
                v = times[(condition, label, name)]
                cells[name] = (statistics.median(v), pct(v, 0.95))
            row = [condition if condition == "quiet" else "one CPU busy", label]
            row += [f"{p50:.2f} / {p95:.2f}" for p50, p95 in cells.values()]
            row.append(f"{cells['no-spin'][0] / cells['spin'][0]:.2f}")
            print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
