"""The shipped `read_only` head against what agents did: on the outcome-labelled prompts
(`data/heads/prompts-real-outcomes`, never trained on), its accuracy against the outcome, and
on the reader-checked sample against both the outcome and the reader's label. Beside it, the
heads of an earlier commit (`--old-ref`), on the same prompts, interleaved.

    python benchmarks/routing_outcomes.py [--old-ref REV]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import train_builtin_heads as tbh
from routing_heads import gateway, old_heads

SAMPLE = tbh.DATA / "prompts-real-outcomes" / "reader_sample.jsonl"


def p_read_only(gw, text: str) -> float:
    result = gw.judge({"state": text, "questions": {"r": {"builtin": "read_only"}}})
    assert result["status"] == "answered", result
    return result["answers"]["r"]["p_true"]


def share(pairs: list[tuple[float, bool]], bar: float | None = None) -> str:
    """Accuracy (and, with a bar, coverage and accuracy where the answer clears it)."""
    right = sum((p >= 0.5) == y for p, y in pairs)
    out = f"{right / len(pairs):.3f} ({right}/{len(pairs)})"
    if bar is not None:
        sure = [(p, y) for p, y in pairs if max(p, 1 - p) >= bar]
        ok = sum((p >= 0.5) == y for p, y in sure)
        out += f"; at {bar}: coverage {len(sure) / len(pairs):.2f}, accuracy {ok / max(1, len(sure)):.3f}"
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old-ref", default="78f1c9a", help="the commit whose shipped routing heads are 'old'")
    args = ap.parse_args()
    rows = tbh.real_test("read_only", outcomes=True)
    sample = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    sample = [r for r in sample if r.get("in_examples")]
    with tempfile.TemporaryDirectory() as tmp:
        engines = {"old": gateway(old_heads(args.old_ref, Path(tmp))), "new": gateway(tbh.SHIPPED_DIR)}
        for which, gw in engines.items():
            outcome = [(p_read_only(gw, r["state"]), r["expected"]) for r in rows]
            said = {r["state"]: p_read_only(gw, r["state"]) for r in sample}
            print(f"{which} heads: outcome-labelled prompts n={len(rows)} "
                  f"({sum(r['expected'] for r in rows)} only read): {share(outcome, 0.8)}")
            for label in ("outcome_read_only", "reader_read_only"):
                pairs = [(said[r["state"]], bool(r[label])) for r in sample]
                print(f"  reader-checked sample n={len(pairs)}, against {label.split('_')[0]}: {share(pairs)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
