"""The labelling-loop commands' argument parsers, imported by the CLI without their heavy
dependencies (numpy, the engine, rich's widgets), which each command imports when it runs."""

from __future__ import annotations

import argparse
import importlib

HELP = {
    "calibrate": "label what the hooks logged, fit honest confidence per engine model and question, "
                 "apply on a yes (--labels FILE --apply: no questions asked)",
    "evaluate": "read-only: is the engine good enough on your own prompts for routing hints? "
                "READY exits 0, not ready exits 3",
    "outcomes": "propose failed / succeeded per subagent spawn from Claude Code transcripts "
                "(--apply writes them into the routing log)",
    "report": "does routing pay off? reach, adherence, subagent cost by tier and savings, from your Claude Code "
              "transcripts (totals only)",
    "bench": "which engine? several rungs over frozen labelled sets: accuracy, ECE, abstention, latency, plots",
    "routing": "the routing mode: log, hint, or set (the Agent hook sets subagent models; only when evaluate "
               "says READY, or with --force); status shows it",
}


def calibrate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--labels", metavar="FILE", help="labelled decisions (the dev.jsonl shape): fit without asking")
    p.add_argument("--jsonl", metavar="REQUESTS", help="also label the requests of a `judge --jsonl` run")
    p.add_argument("--results", metavar="RESULTS", help="its results (same line order): the proposals")
    p.add_argument("--log", metavar="FILE", help="the routing log (default: the hooks' log)")
    p.add_argument("--provider", metavar="NAME", help="the rung (or A,B chain) to calibrate (default: the chain)")
    p.add_argument("--propose-with", metavar="NAME", help="ask this (stronger) rung for the proposals")
    p.add_argument("--proposals", metavar="FILE", help='{"key", "label"} lines that replace the proposals')
    p.add_argument("--confirmed", action="store_true", help="with --proposals: the user already confirmed "
                                                            "them (e.g. in the chat): record them as labels")
    p.add_argument("--pending", action="store_true", help="print the items waiting for a label (JSON Lines) and stop")
    p.add_argument("--no-label", action="store_true", help="skip labelling: fit on the labels given so far")
    p.add_argument("--target-accuracy", type=float, default=0.9, metavar="P",
                   help="the accuracy a threshold must keep at its bootstrap 5%% bound (default 0.9)")
    p.add_argument("--apply", action="store_true", help="write the fits without asking")
    p.add_argument("--plot", metavar="PNG", help="where the reliability diagram goes "
                                                 "(default <state>/calibration/reliability-<time>.png)")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout")


def evaluate_arguments(p: argparse.ArgumentParser) -> None:
    _evaluate_bars(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout")


def routing_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("mode", choices=["log", "hint", "set", "status"],
                   help="log: record only; hint: the one-line hint; set: the Agent hook sets the subagent's "
                        "model (runs evaluate first); status: show the mode")
    p.add_argument("--force", action="store_true", help="set: turn it on although evaluate does not say READY "
                                                        "(recorded as FORCED; status and report show it)")
    _evaluate_bars(p)


def _evaluate_bars(p: argparse.ArgumentParser) -> None:
    p.add_argument("--provider", metavar="NAME", help="the rung (or A,B chain) to evaluate (default: the chain)")
    p.add_argument("--log", metavar="FILE", help="the routing log (default: the hooks' log)")
    p.add_argument("--labels-file", metavar="FILE", help="the labels file (default: the one calibrate writes)")
    p.add_argument("--min-feature-accuracy", type=float, default=0.85, metavar="P",
                   help="each routing feature's accuracy at the threshold (default 0.85)")
    p.add_argument("--min-safety", type=float, default=0.95, metavar="P",
                   help="share of failed spawns where the rule picks a higher tier (default 0.95)")
    p.add_argument("--min-failures", type=int, default=30, metavar="N",
                   help="failed spawns labelled before the verdict can be READY (default 30)")


def outcomes_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--projects", metavar="DIR", help="Claude Code transcripts root "
                   "(default: $CLAUDE_CONFIG_DIR/projects or ~/.claude/projects)")
    p.add_argument("--log", metavar="FILE", help="routing log (default: the hooks' log)")
    p.add_argument("--since", metavar="AGE", help="only sessions active in the last AGE: 30d, 12h, 2w")
    p.add_argument("--apply", action="store_true", help="write the proposals into the routing log")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")


def report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--since", default="30d", metavar="AGE", help="the period: 30d (default), 12h, 2w")
    p.add_argument("--project", metavar="PATH", help="only this working directory's sessions")
    p.add_argument("--projects", metavar="DIR", help="Claude Code transcripts root "
                   "(default: $CLAUDE_CONFIG_DIR/projects or ~/.claude/projects)")
    p.add_argument("--log", metavar="FILE", help="routing log (default: the hooks' log)")
    p.add_argument("--prices", metavar="FILE", help="a prices.json (default: ~/.system1-gateway/prices.json, "
                                                     "else the shipped one)")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    p.add_argument("--html", metavar="FILE", help="also write one self-contained page with the charts")


def bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sets", nargs="+", metavar="SET.jsonl", help="labelled sets (the dev.jsonl shape)")
    p.add_argument("--providers", required=True, metavar="A,B,…", help="the rungs to compare, comma-separated")
    p.add_argument("--out", required=True, metavar="DIR", help="results.json, the plots and the answer cache")
    p.add_argument("--limit", type=int, metavar="N", help="at most N items per task")
    p.add_argument("--min-confidence", type=float, metavar="X", help="the threshold for the abstention rate "
                                                                     "(default: as configured / fitted)")


PARSERS = {"calibrate": (HELP["calibrate"], calibrate_arguments),
           "evaluate": (HELP["evaluate"], evaluate_arguments),
           "outcomes": (HELP["outcomes"], outcomes_arguments),
           "report": (HELP["report"], report_arguments),
           "bench": (HELP["bench"], bench_arguments),
           "routing": (HELP["routing"], routing_arguments)}


MODULES = {"calibrate": "system1_gateway.learn.calibrate", "evaluate": "system1_gateway.learn.evaluate",
           "outcomes": "system1_gateway.insight.outcomes", "report": "system1_gateway.insight.report_view",
           "bench": "system1_gateway.learn.bench", "routing": "system1_gateway.learn.routing_mode"}


def run(name: str, args: argparse.Namespace) -> int:
    return importlib.import_module(MODULES[name]).run(args)
