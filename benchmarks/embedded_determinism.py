"""Does an llm answer depend on what the engine decoded before? (numerical, not the correction)

    python benchmarks/embedded_determinism.py

Asks one dev question about one command in a fresh engine, then in a second fresh engine
that first answered another dev question (which leaves that question's prefix in the shared
KV cache), then again in the second engine after more traffic. Prints the probabilities, the
largest difference, and whether the bytes are equal. The bias correction cannot move (it is a
function of the question); what this measures is llama.cpp's arithmetic: the same tokens,
placed at other cells of the unified KV cache, are summed in another order, and the 8-bit
quantisation of activations between layers amplifies the rounding.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from embedded_dev import DEV
from system1_gateway.model.requests import parse_judge
from system1_gateway.providers.embedded import assets, prompts, usable_cpus
from system1_gateway.providers.embedded.llm import LlmEngine


def main() -> int:
    questions: dict[str, dict] = {}
    for line in DEV.read_text().splitlines():
        item = json.loads(line)
        questions.setdefault(item["task"], item["question"])

    def build(task: str):
        return prompts.build(parse_judge({"state": "s", "questions": {"q": questions[task]}}).questions["q"])

    path, threads = str(assets.gguf_path()), usable_cpus()
    (pa, oa), (pb, ob) = build("destructive"), build("read_only")
    evidence = prompts.suffix("git clean -fdx")
    fresh = LlmEngine(path, threads, n_slots=4, kv_dir=None).option_probs(pa, evidence, oa, 300)
    busy = LlmEngine(path, threads, n_slots=4, kv_dir=None)
    busy.option_probs(pb, evidence, ob, 300)
    after_other = busy.option_probs(pa, evidence, oa, 300)
    for command in ("ls", "rm -rf build/", "cat README.md"):
        busy.option_probs(pa, prompts.suffix(command), oa, 300)
    after_more = busy.option_probs(pa, evidence, oa, 300)
    print("destructive question, evidence `git clean -fdx`, p(Destructive):")
    print(f"  fresh engine                                   {fresh[0]:.6f}")
    print(f"  after another question's prefix was cached     {after_other[0]:.6f}  (bytes equal to fresh: "
          f"{fresh.tobytes() == after_other.tobytes()}, difference {np.abs(fresh - after_other).max():.6f})")
    print(f"  same engine, after three more decisions        {after_more[0]:.6f}  (bytes equal to the previous: "
          f"{after_more.tobytes() == after_other.tobytes()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
