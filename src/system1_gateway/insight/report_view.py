"""`system1 report`'s faces: the terminal tables, `--json`, and `--html FILE` (one
self-contained page; its charts are matplotlib PNGs inlined as data URIs)."""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import sys
import time
from pathlib import Path
from typing import Any

from .prices import TIERS, PriceError, load
from .report import approvals, join_log, scan, summarize

EXIT_OK, EXIT_INVALID = 0, 2
SUBSCRIPTION = ("Figures are API list prices. A Claude subscription (Pro, Max, Team) bills differently: read them "
                "as what the same tokens would cost on the API, and the savings as a share, not your bill.")


def _usd(x: float | None) -> str:
    if x is None:
        return "–"
    sign = "-" if x < 0 else ""
    return f"{sign}${abs(x):,.2f}" if abs(x) >= 1 else f"{sign}${abs(x):.4f}"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.0%}"


def render(report: dict[str, Any], console: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    head = Table(title=f"System-1 routing, {report['period']}", show_header=False)
    head.add_column(justify="left")
    head.add_column(justify="right")
    if report.get("routing_mode"):
        head.add_row("routing mode (now)", escape(report["routing_mode"]))
    head.add_row("sessions / prompts", f"{report['sessions']} / {report['prompts']}")
    approved = report.get("approvals")
    if approved and approved["prompts"]:
        rules = ", ".join(f"{escape(r)} {n}" for r, n in list(approved["by_rule"].items())[:6])
        head.add_row("permission prompts answered (approve)",
                     f"{approved['answered']} of {approved['prompts']} ({_pct(approved['share_answered'])})" + (f": {rules}" if rules else ""))
    head.add_row("reach (prompts with a hint)", f"{report['hinted']} ({_pct(report['reach'])})")
    head.add_row("spawns / under a hint", f"{report['spawns']} / {report['spawns_under_hint']}")
    head.add_row("adherence (ran the hinted tier)", _pct(report["adherence"]))
    head.add_row("upgraded past the hint / downgraded", f"{report['upgraded']} / {report['downgraded']}")
    if report["mode"] == "shadow":
        sh = report["shadow"]
        head.add_row("shadow: rule = what ran / cheaper / pricier",
                     f"{sh['rule_matches']} / {sh['rule_cheaper']} / {sh['rule_pricier']} of {sh['spawns']}")
    seen = report.get("spawn_outcomes")
    if seen and seen["spawns"]:
        outcomes = ", ".join(f"{escape(k)} {n}" for k, n in seen["by_outcome"].items())
        below = ", ".join(f"{escape(k)} {n}" for k, n in seen["below_by_feature"].items())
        head.add_row("spawns the Agent hook saw, by outcome",
                     f"{seen['spawns']}: {outcomes}" + (f" (below the bar: {below})" if below else ""))
    st = report["set"]
    if st["spawns"]:
        head.add_row("spawns the hook set / ran on that tier", f"{st['spawns']} / {st['ran_as_set']}")
        head.add_row("of those: succeeded / failed", f"{st['succeeded']} / {st['failed']} "
                                                       f"(failure rate {_pct(st['failure_rate'])})")
    console.print(head)
    tiers = Table(title="cost by tier (subagents, then the main loop)")
    for col in ("tier", "spawns", "input", "output", "cache read", "cache write 5m", "cache write 1h", "cost"):
        tiers.add_column(col, justify="left" if col == "tier" else "right")
    for key, row in report["by_tier"].items():
        t = row["tokens"]
        tiers.add_row(key.replace(":", " "), str(row["spawns"]) if key.startswith("subagent") else "",
                      f"{t['input']:,}", f"{t['output']:,}", f"{t['cache_read']:,}", f"{t['cache_write_5m']:,}",
                      f"{t['cache_write_1h']:,}", _usd(row["cost_usd"]))
    console.print(tiers)
    s = report["savings"]
    if st["spawns"]:
        console.print(f"spawns the hook set: saved {_usd(st['realised_usd'])} on those that succeeded (against what "
                      f"would have run), lost {_usd(st['failed_cost_usd'])} on those that failed · net "
                      f"{_usd(st['net_usd'])}")
    console.print(f"realised savings {_usd(s['realised_usd'])} · missed {_usd(s['missed_usd'])} · hint overhead "
                  f"{_usd(s['hint_overhead_usd'])} · [bold]net {_usd(s['net_usd'])}[/bold]"
                  + (f"  (usual mix: {', '.join(f'{t} {v:.0%}' for t, v in s['usual_mix'].items() if v)})"
                     if s["usual_mix"] else ""))
    console.print(f"[dim]{SUBSCRIPTION} Prices {report['prices']['date']}: {report['prices']['file']}.[/dim]")
    if report["unpriced_models"]:
        console.print(f"[yellow]no price for[/yellow] {', '.join(report['unpriced_models'])} "
                      f"(add them to ~/.system1-gateway/prices.json)")
    scan_ = report["scan"]
    console.print(f"[dim]{scan_['files']} transcript files, {scan_['bytes'] / 1e6:.1f} MB in {scan_['seconds']} s"
                  + (f", {scan_['skipped_lines']} unreadable lines skipped" if scan_["skipped_lines"] else "") + "[/dim]")
    console.print(f"next: {escape(report['next'])}")


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return base64.b64encode(buf.getvalue()).decode()


def charts(report: dict[str, Any]) -> list[tuple[str, str]]:
    """(title, base64 PNG) of the two charts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    days = [d for d in report["daily"] if d["day"] != "?"] or report["daily"]
    labels = [d["day"][5:] for d in days]
    out = []
    fig, ax = plt.subplots(figsize=(8, 3.4))
    bottom = [0.0] * len(days)
    for tier, color in zip(TIERS, ("#2ca02c", "#1f77b4", "#9467bd", "#d62728"), strict=True):
        values = [d["cost"][tier] for d in days]
        ax.bar(labels, values, bottom=bottom, label=tier, color=color)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set(title="Subagent cost by tier over time", ylabel="USD (API list prices)")
    ax.legend(fontsize=8)
    ax.tick_params(axis="x", labelrotation=45, labelsize=8)
    fig.tight_layout()
    out.append(("Subagent cost by tier over time", _png(fig)))
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(8, 3.4))
    reach = [d["hinted"] / d["prompts"] if d["prompts"] else 0 for d in days]
    ax.bar(labels, [d["prompts"] for d in days], color="#cccccc", label="prompts")
    ax.bar(labels, [d["hinted"] for d in days], color="#ff7f0e", label="prompts with a hint")
    ax2 = ax.twinx()
    ax2.plot(labels, reach, color="#d62728", marker="o", label="reach")
    ax2.set(ylim=(0, 1.05), ylabel="reach")
    ax.set(title=f"Reach and adherence (adherence over the period: {_pct(report['adherence'])})", ylabel="prompts")
    ax.legend(loc="upper left", fontsize=8)
    ax.tick_params(axis="x", labelrotation=45, labelsize=8)
    fig.tight_layout()
    out.append(("Reach and adherence", _png(fig)))
    plt.close(fig)
    return out


def _outcomes(seen: dict[str, Any] | None) -> str:
    if not seen or not seen["spawns"]:
        return "–"
    return f"{seen['spawns']}: " + ", ".join(f"{k} {n}" for k, n in seen["by_outcome"].items())


def page(report: dict[str, Any]) -> str:
    s = report["savings"]
    rows = "".join(
        f"<tr><td>{html.escape(k.replace(':', ' '))}</td><td>{v['spawns'] if k.startswith('subagent') else ''}</td>"
        + "".join(f"<td>{v['tokens'][b]:,}</td>" for b in ("input", "output", "cache_read", "cache_write_5m",
                                                          "cache_write_1h"))
        + f"<td>{_usd(v['cost_usd'])}</td></tr>" for k, v in report["by_tier"].items())
    figures = "".join(f'<figure><h2>{html.escape(title)}</h2><img alt="{html.escape(title)}" '
                      f'src="data:image/png;base64,{data}"></figure>' for title, data in charts(report))
    facts = [("Sessions / prompts", f"{report['sessions']} / {report['prompts']}"),
             ("Reach", f"{report['hinted']} prompts ({_pct(report['reach'])})"),
             ("Adherence", f"{_pct(report['adherence'])} of {report['spawns_under_hint']} spawns under a hint"),
             ("Upgraded past the hint", str(report["upgraded"])),
             ("Spawns the hook set (succeeded / failed)",
              f"{report['set']['spawns']} ({report['set']['succeeded']} / {report['set']['failed']})"),
             ("Net of the spawns the hook set", _usd(report["set"]["net_usd"])),
             ("Spawns the Agent hook saw, by outcome", _outcomes(report.get("spawn_outcomes"))),
             ("Realised savings", _usd(s["realised_usd"])), ("Missed savings", _usd(s["missed_usd"])),
             ("Hint overhead", _usd(s["hint_overhead_usd"])), ("Net", _usd(s["net_usd"]))]
    items = "".join(f"<tr><th>{html.escape(a)}</th><td>{html.escape(b)}</td></tr>" for a, b in facts)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>System-1 report: {html.escape(report['period'])}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:60em;color:#222}}table{{border-collapse:collapse;
margin:1em 0}}td,th{{border:1px solid #ddd;padding:.3em .6em;text-align:right}}th{{text-align:left}}
img{{max-width:100%}}.note{{color:#666;font-size:.9em}}</style></head>
<body><h1>System-1 routing report</h1><p>{html.escape(report['period'])}. Totals only: no prompt text.
Routing mode now: {html.escape(str(report.get('routing_mode') or '–'))}.</p>
<table>{items}</table>
<h2>Cost by tier</h2><table><tr><th>tier</th><th>spawns</th><th>input</th><th>output</th><th>cache read</th>
<th>cache write 5m</th><th>cache write 1h</th><th>cost</th></tr>{rows}</table>
{figures}
<p class="note">{html.escape(SUBSCRIPTION)} Prices of {html.escape(report['prices']['date'])}
({html.escape(report['prices']['source'])}).</p>
<p><strong>Next:</strong> {html.escape(report['next'])}</p>
<script>
// for headless checks: how many charts decoded
window.addEventListener("load", () => {{
  const ok = [...document.images].filter(i => i.complete && i.naturalWidth > 0).length;
  document.body.dataset.chartsLoaded = String(ok);
}});
</script></body></html>
"""


def _since(text: str) -> float:
    from .outcomes import parse_age

    return time.time() - parse_age(text)


def _slug(path: str) -> str:
    """Claude Code's project directory name for a working directory."""
    import re

    return re.sub(r"[^A-Za-z0-9]", "-", str(Path(path).expanduser().resolve()))


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    from ..routing import log as routing_log
    from ..routing import spawns
    from .transcripts import default_root, iter_files

    console = Console(stderr=True, width=None if sys.stderr.isatty() else 140)

    def refuse(message: str) -> int:
        console.print(f"[red]report:[/red] {message}")
        return EXIT_INVALID
    try:
        since = _since(args.since)
    except ValueError:
        return refuse(f"--since: expected an age such as 30d, 12h or 2w, got {args.since!r}")
    root = Path(args.projects).expanduser() if args.projects else default_root()
    if args.projects and not root.is_dir():
        return refuse(f"--projects: {root} is not a directory")
    log = Path(args.log).expanduser() if args.log else Path(routing_log.path())
    if args.log and not log.exists():
        return refuse(f"--log: {log} does not exist")
    try:
        prices = load(Path(args.prices).expanduser() if args.prices else None)
    except PriceError as exc:
        return refuse(f"--prices: {exc}" if args.prices else str(exc))
    project = _slug(args.project) if args.project else None
    # sizes first (a directory walk, no reading), so the bar can show bytes left
    total = sum(tf.size for tf in iter_files(root, since, project))
    with Progress("reading transcripts", BarColumn(), DownloadColumn(), TimeRemainingColumn(), console=console,
                  transient=True, disable=total < 50_000_000) as bar:
        task = bar.add_task("scan", total=total)
        facts = scan(root, since, project, lambda n: bar.advance(task, n))
    join_log(facts, log)
    report = summarize(facts, prices)
    report["approvals"] = approvals(log, since)
    report["spawn_outcomes"] = spawns.counts(log, since)
    from ..config import tables as config_tables
    from ..routing import gate

    routing = config_tables.load()[0]["routing"]
    report["routing_mode"] = gate.describe(routing["mode"], gate.read()) if routing["enabled"] else "off"
    report["period"] = (f"since {time.strftime('%Y-%m-%d', time.localtime(since))} ({args.since})"
                        + (f", project {args.project}" if args.project else ""))
    if args.html:
        try:
            Path(args.html).write_text(page(report), encoding="utf-8")
        except OSError as exc:
            return refuse(f"--html: cannot write {args.html}: {exc.strerror or exc}")
        console.print(f"page: {args.html}")
    if args.json:
        print(json.dumps(report))
    else:
        render(report, console)
    return EXIT_OK
