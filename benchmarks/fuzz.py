"""The long fuzz run: the property targets of tests/test_fuzz.py, many more cases.

    python benchmarks/fuzz.py [--cases 100000] [--seed 1] [--only NAME,…] [--list]

Same strategies, fake engines and property checks as the test suite (tests/fuzz_strategies.py),
driven by hypothesis in generate-only mode (no shrinking; every case is counted, none stops
the run). Targets: the core (judge, decide, DEBUG audit, deadline with a slow mock), the MCP
tool handlers, the CLI (decide argv, judge files/stdin, --jsonl streams), every HTTP adapter
(systemone, jev, von, laya, ollama, openai through its SDK) on generated responses, key echo
in error bodies, hanging / slow-drip engines under short deadlines; and the HTTP
Guard against every kind of wrong Authorization header, per-request chains naming rungs the
owner did not configure, and bounded_json on any text. No socket is opened
(httpx.MockTransport) and no model is loaded.

Prints, per target: cases, crashes (an exception escaped the entry point), internal errors
(an exception a safety net caught: a bug all the same), schema violations, other property
violations, keys leaked, max elapsed past the deadline; then the distinct crash and violation
signatures with counts and one example each.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
HOME = tempfile.mkdtemp(prefix="system1-fuzz-home-")  # each case also gets its own state dir
os.environ["SYSTEM1_STATE_DIR"] = HOME
os.environ["XDG_CONFIG_HOME"] = os.path.join(HOME, "xdg")  # no user config file
for _var in [v for v in os.environ if v.startswith("SYSTEM1_") and v != "SYSTEM1_STATE_DIR"]:
    del os.environ[_var]
# The faces are fuzzed in-process and through the CLI, never through a daemon: with autostart on
# (the default outside the test suite) every CLI case, each in its own state dir, started one.
os.environ["SYSTEM1_SERVE_AUTOSTART"] = "0"

import json
import warnings

# The openai SDK's models warn (pydantic serializer) on every odd value the fake sends: noise here.
warnings.filterwarnings("ignore", category=UserWarning, module="pydantic")
warnings.filterwarnings("ignore", message="Generating overly large repr")

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

import fuzz_strategies as fz
import test_fuzz as tf  # its argv / file strategies

# name → (share of the cases, strategy of kwargs, runner)
TARGETS: dict[str, tuple[float, st.SearchStrategy, object]] = {}


def target(name: str, share: float, strategy: st.SearchStrategy):
    def register(fn):
        TARGETS[name] = (share, strategy, fn)
        return fn
    return register


@target("core_judge", 0.18, st.fixed_dictionaries({"payload": fz.judge_payloads, "mock": fz.mock_settings,
                                                   "fallback": st.booleans()}))
def _core_judge(payload, mock, fallback):
    return fz.run_core("judge", payload, mock, fallback=fallback)


@target("core_decide", 0.12, st.fixed_dictionaries({"payload": fz.decide_payloads, "mock": fz.mock_settings,
                                                    "fallback": st.booleans()}))
def _core_decide(payload, mock, fallback):
    return fz.run_core("decide", payload, mock, fallback=fallback)


@target("core_debug_audit", 0.04, st.fixed_dictionaries({"payload": fz.judge_payloads | fz.decide_payloads}))
def _core_debug(payload):
    return fz.run_core("judge", payload, debug=True)


@target("core_deadline", 0.006, st.fixed_dictionaries({
    "payload": fz.http_payloads(2),
    "mock": st.fixed_dictionaries({"latency_ms": st.sampled_from([0, 5, 40, 120, 300]),
                                   "mode": st.sampled_from(["answer", "answer", "timeout"])}),
    "fallback": st.booleans(), "timeout_s": st.sampled_from([0.01, 0.05, 0.1, 0.3]),
    "deadline_s": st.sampled_from([0.02, 0.06, 0.12, 0.25])}))
def _core_deadline(payload, mock, fallback, timeout_s, deadline_s):
    payload = {k: v for k, v in payload.items() if k != "deadline_s"}
    return fz.run_core("judge", payload, mock, fallback=fallback, timeout_s=timeout_s, deadline_s=deadline_s)


@target("mcp_tools", 0.10, st.fixed_dictionaries({"call": tf.mcp_calls, "mock": fz.mock_settings}))
def _mcp(call, mock):
    return fz.run_mcp(call[0], call[1], mock)


@target("cli_decide", 0.06, st.fixed_dictionaries({"argv": tf.decide_argv(), "mock": fz.mock_settings}))
def _cli_decide(argv, mock):
    return fz.run_cli(argv, mock=mock)


@target("cli_judge", 0.06, st.fixed_dictionaries({
    "data": tf.judge_files, "where": st.sampled_from(["file", "stdin", "missing", "dir"]), "pretty": st.booleans(),
    "provider": st.sampled_from([None, None, "mock", "nope"]), "mock": fz.mock_settings}))
def _cli_judge(data, where, pretty, provider, mock):
    argv = ["judge", {"file": "{file:req.json}", "stdin": "-", "missing": "/nonexistent/req.json", "dir": "/"}[where]]
    argv += ["--pretty"] * pretty + (["--provider", provider] if provider else [])
    return fz.run_cli(argv, stdin=data if where == "stdin" else b"", files={"req.json": data}, mock=mock)


@target("cli_jsonl", 0.03, st.fixed_dictionaries({"inp": tf.jsonl_inputs(), "via_stdin": st.booleans(),
                                                  "mock": fz.mock_settings}))
def _cli_jsonl(inp, via_stdin, mock):
    data, expected = inp
    argv = ["judge", "-" if via_stdin else "{file:req.jsonl}", "--jsonl"]
    return fz.run_cli(argv, stdin=data if via_stdin else b"", files={"req.jsonl": data}, mock=mock,
                      jsonl_lines=expected)


def _http_target(kind: str, share: float) -> None:
    strategy = st.fixed_dictionaries({"script": fz.http_scripts(kind), "key": fz.keys, "fallback": st.booleans()})

    def run(script, key, fallback):
        payload, posts, gets = script
        return fz.run_http(kind, payload, posts, gets, key, fallback=fallback)

    TARGETS[f"http_{kind}"] = (share, strategy, run)


for _kind in fz.HTTP_KINDS:
    _http_target(_kind, 0.06)
_http_target("openai", 0.04)


@target("key_echo", 0.03, st.fixed_dictionaries({
    "kind": st.sampled_from([*fz.HTTP_KINDS, "openai"]), "payload": fz.http_payloads(3), "key": fz.keys,
    "template": st.sampled_from(fz.ERROR_TEMPLATES),
    "status": st.sampled_from([400, 401, 402, 403, 404, 422, 429, 500, 503, 529, 302]),
    "headers": fz.header_sets, "reason": fz.reasons}))
def _key_echo(kind, payload, key, template, status, headers, reason):
    body = json.dumps(template).encode()
    reply = fz.WireReply(status=status, headers=headers, reason=reason, body=body)
    gets = {p: fz.WireReply(status=401, body=body, reason=reason)
            for p in ("/health", "/healthz", "/v1/models", "/api/version")}
    return fz.run_http(kind, payload, [reply], gets, key)


@target("http_deadline", 0.004, st.fixed_dictionaries({
    "kind": st.sampled_from([*fz.HTTP_KINDS, "openai"]), "data": st.data(), "key": fz.keys, "fallback": st.booleans(),
    "timeout_s": st.sampled_from([0.05, 0.1, 0.2, 0.3]), "deadline_s": st.sampled_from([0.05, 0.12, 0.25, 0.4])}))
def _http_deadline(kind, data, key, fallback, timeout_s, deadline_s):
    payload, posts, gets = data.draw(fz.http_scripts(kind, hang=True))
    return fz.run_http(kind, payload, posts, gets, key, fallback=fallback, timeout_s=timeout_s,
                       deadline_s=deadline_s, direct=False, probe=False)


# The daemon's token, per-request chains, bounded JSON
@target("http_auth", 0.03, st.fixed_dictionaries({"route": st.sampled_from(fz.AUTH_ROUTES),
                                                  "headers": fz.auth_header_sets}))
def _http_auth(route, headers):
    return fz.run_http_auth(route, headers)


@target("chain_override", 0.03, st.fixed_dictionaries({
    "face": st.sampled_from(list(fz.CHAIN_WHERE)), "value": fz.chain_values(),
    "kind": st.sampled_from(["decide", "judge"])}))
def _chain_override(face, value, kind):
    return fz.run_chain(face, value, kind)


@target("bounded_json", 0.02, st.fixed_dictionaries({
    "text": fz.json_documents, "max_depth": st.sampled_from([None, 1, 3, 64, 900]), "file": st.booleans()}))
def _bounded_json(text, max_depth, file):
    return fz.run_bounded_json(text, max_depth, file)


def signature(text: str) -> str:
    """A violation or crash with its variable parts (numbers, quoted values) blanked."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "…", text)
    return re.sub(r"\d+(\.\d+)?", "N", text)[:160]


class Tally:
    def __init__(self, name: str):
        self.name = name
        self.cases = self.crashes = self.internal = self.schema = self.other = self.leaks = self.late = 0
        self.max_over = float("-inf")
        self.signatures: Counter[str] = Counter()
        self.examples: dict[str, str] = {}
        self.outcomes: Counter[str] = Counter()
        self.seconds = 0.0

    def merge(self, other: "Tally") -> None:
        for k in ("cases", "crashes", "internal", "schema", "other", "leaks", "late", "seconds"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        self.max_over = max(self.max_over, other.max_over)
        self.signatures.update(other.signatures)
        self.outcomes.update(other.outcomes)
        for sig, ex in other.examples.items():
            self.examples.setdefault(sig, ex)

    def add(self, case: fz.Case, kwargs: dict) -> None:
        self.cases += 1
        self.outcomes[case.outcome or "?"] += 1
        if case.overshoot_s and case.overshoot_s > self.max_over and case.overshoot_s > -1e5:
            self.max_over = case.overshoot_s
        problems = []
        if case.crash:
            self.crashes += 1
            problems.append("CRASH " + case.crash)
        kinds = set()
        for v in case.violations:
            if v.startswith("schema") or ": schema" in v:
                kinds.add("schema")
            elif "safety net" in v or "internal error" in v:
                kinds.add("internal")
            elif "key leaked" in v:
                kinds.add("leak")
            elif v.startswith("elapsed"):
                kinds.add("late")
            else:
                kinds.add("other")
            problems.append(v)
        self.schema += "schema" in kinds
        self.internal += "internal" in kinds
        self.leaks += "leak" in kinds
        self.late += "late" in kinds
        self.other += "other" in kinds
        for p in problems:
            sig = signature(p)
            self.signatures[sig] += 1
            if sig not in self.examples:
                self.examples[sig] = f"{p[:300]}\n      input: {repr(kwargs)[:600]}"


def run_target(name: str, n: int, seed_value: int) -> Tally:
    # The daemon freezes its start-up heap once warm (core.freeze_heap), and then a full
    # collection takes ≈ 0 ms: its deadlines are what a case measures. This harness's own heap
    # (hypothesis' data, which grows over a run) made collections of 100–400 ms that landed inside
    # whichever case triggered them, so the collector runs between cases, not during one.
    gc.collect()
    gc.freeze()
    share, strategy, fn = TARGETS[name]
    tally = Tally(name)

    @seed(seed_value)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), derandomize=False)
    @given(kwargs=strategy)
    def prop(kwargs):
        gc.disable()
        try:
            case = fn(**kwargs)
        except Exception as exc:  # noqa: BLE001 - a harness bug is counted, not fatal
            case = fz.Case(name, crash=f"harness: {type(exc).__name__}: {exc}"[:300])
        finally:
            gc.enable()
        tally.add(case, kwargs)

    t0 = time.perf_counter()
    try:
        prop()
    except Exception as exc:  # noqa: BLE001 - a strategy that failed to generate: counted, the run goes on
        tally.crashes += 1
        sig = f"harness: generation failed: {type(exc).__name__}: {str(exc)[:200]}"
        tally.signatures[sig] += 1
        tally.examples[sig] = sig
    tally.seconds = time.perf_counter() - t0
    return tally


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=100_000, help="total cases, split by each target's share")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", help="comma list of targets")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    ap.add_argument("--chunk", type=int, default=2500, help="cases per work unit (each with its own seed)")
    args = ap.parse_args()
    if args.list:
        for name, (share, _, _) in TARGETS.items():
            print(f"{name:<18} {share:.3f}")
        return 0
    names = args.only.split(",") if args.only else list(TARGETS)
    total_share = sum(TARGETS[n][0] for n in names)
    plan = {n: max(1, round(args.cases * TARGETS[n][0] / total_share)) for n in names}
    print(f"fuzz campaign: {sum(plan.values())} cases over {len(plan)} targets, seed {args.seed}, "
          f"{args.jobs} worker processes, python {sys.version.split()[0]}, {os.cpu_count()} cores", flush=True)
    units = [(name, min(args.chunk, plan[name] - start), args.seed * 1000 + i)
             for name in names for i, start in enumerate(range(0, plan[name], args.chunk))]
    units.sort(key=lambda u: -u[1] * (30 if u[0].startswith(("http", "key")) else 1))  # big, slow units first
    merged: dict[str, Tally] = {name: Tally(name) for name in names}
    t0 = time.perf_counter()
    if args.jobs > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [pool.submit(run_target, *unit) for unit in units]
            for future in as_completed(futures):
                part = future.result()
                new = [sig for sig in part.signatures if sig not in merged[part.name].signatures]
                merged[part.name].merge(part)
                for sig in new:
                    print(f"    new: {part.examples[sig][:900]}", flush=True)
                print(f"  {part.name:<18} +{part.cases:>6} cases in {part.seconds:7.1f} s: crashes {part.crashes}, "
                      f"internal {part.internal}, schema {part.schema}, other {part.other}, leaks {part.leaks}, "
                      f"late {part.late}", flush=True)
    else:
        for unit in units:
            part = run_target(*unit)
            merged[part.name].merge(part)
            print(f"  {part.name:<18} +{part.cases:>6} cases in {part.seconds:7.1f} s", flush=True)
    tallies = [merged[name] for name in names]
    wall = time.perf_counter() - t0

    print()
    head = (f"{'target':<18} {'cases':>7} {'crashes':>8} {'internal':>9} {'schema':>7} {'other':>6} "
            f"{'keys leaked':>11} {'late':>5} {'max past deadline':>18} {'cpu s':>7}")
    print(head)
    print("-" * len(head))
    totals = defaultdict(float)
    worst = float("-inf")
    for t in tallies:
        over = "n/a" if t.max_over == float("-inf") else f"{t.max_over * 1000:+.1f} ms"
        print(f"{t.name:<18} {t.cases:>7} {t.crashes:>8} {t.internal:>9} {t.schema:>7} {t.other:>6} {t.leaks:>11} "
              f"{t.late:>5} {over:>18} {t.seconds:>7.1f}")
        for k in ("cases", "crashes", "internal", "schema", "other", "leaks", "late", "seconds"):
            totals[k] += getattr(t, k)
        worst = max(worst, t.max_over)
    print("-" * len(head))
    print(f"{'total':<18} {int(totals['cases']):>7} {int(totals['crashes']):>8} {int(totals['internal']):>9} "
          f"{int(totals['schema']):>7} {int(totals['other']):>6} {int(totals['leaks']):>11} {int(totals['late']):>5} "
          f"{'n/a' if worst == float('-inf') else f'{worst * 1000:+.1f} ms':>18} {totals['seconds']:>7.1f}")
    print(f"wall time {wall:.1f} s with {args.jobs} worker process(es); "
          f"{totals['cases'] / wall:.0f} cases/s")
    print("\n'max past deadline' is elapsed − deadline (negative: back before the deadline); the property "
          f"allows +{fz.DEADLINE_SLACK_S * 1000:.0f} ms.")

    sigs = Counter()
    examples = {}
    for t in tallies:
        for sig, count in t.signatures.items():
            sigs[(t.name, sig)] += count
            examples.setdefault((t.name, sig), t.examples[sig])
    if sigs:
        print(f"\n{len(sigs)} distinct problem signatures (target: count × signature, then one example):")
        for (name, sig), count in sigs.most_common():
            print(f"  {name}: {count} × {sig}\n      {examples[(name, sig)]}")
    else:
        print("\nno crash and no property violation")
    outcomes = Counter()
    for t in tallies:
        outcomes.update(t.outcomes)
    print("\noutcomes (result status or error code) over all cases: "
          + ", ".join(f"{k} {v}" for k, v in outcomes.most_common()))
    return 1 if any(totals[k] for k in ("crashes", "internal", "schema", "other", "leaks", "late")) else 0


if __name__ == "__main__":
    sys.exit(main())
