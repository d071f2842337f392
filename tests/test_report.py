"""`system1 report`: totals from real Claude Code transcripts (tests/data/report, made by the
real CLI with the plugin's hooks; see its make_fixtures.py) checked against hand-computed
numbers, synthetic edge cases, prices, bad input, and the HTML page in headless Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, require, run_cli
from system1_gateway.insight import prices as price_mod
from system1_gateway.insight.report import Facts, join_log, scan, summarize, tier_in_hint
from test_outcomes import envelope, spawn, write_session

DATA = ROOT / "tests" / "data" / "report"
EXPECTED = json.loads((DATA / "expected.json").read_text())
PRICES = price_mod.load(price_mod.SHIPPED)


def report_of(root: Path, log: Path | None = None) -> dict:
    facts = scan(root, None, None)
    if log:
        join_log(facts, log)
    return summarize(facts, PRICES)


def by_hand(scope: str, family: str) -> dict[str, int]:
    """Token sums of expected.json's responses (what the mock was told to send)."""
    sums = {"input": 0, "output": 0, "cache_write_5m": 0, "cache_write_1h": 0, "cache_read": 0}
    for session in EXPECTED["sessions"].values():
        for model, responses in session["responses_by_model"].items():
            if family not in model:
                continue
            for r in responses.values():
                if (r["agent"] == "main") != (scope == "main"):
                    continue
                u = r["usage"]
                sums["input"] += u["input_tokens"]
                sums["output"] += u["output_tokens"]
                sums["cache_read"] += u["cache_read_input_tokens"]
                sums["cache_write_5m"] += u["ephemeral_5m_input_tokens"]
                sums["cache_write_1h"] += u["ephemeral_1h_input_tokens"]
    return sums


def session(name: str) -> dict:
    return next(s for s in EXPECTED["sessions"].values() if s["name"] == name)


def test_real_transcripts_give_hand_computed_totals():
    r = report_of(DATA / "projects", DATA / "routing.jsonl")
    assert (r["sessions"], r["prompts"], r["hinted"], r["reach"]) == (3, 3, 1, 0.3333)
    # the hinted session: two spawns in one response, opus followed the hint, haiku went below it
    assert (r["spawns"], r["spawns_under_hint"], r["followed"], r["downgraded"], r["upgraded"]) == (4, 2, 1, 1, 0)
    assert r["adherence"] == 0.5 and r["mode"] == "hints"
    # the shadow session (hint = false): the rule said sonnet, sonnet ran
    assert r["shadow"] == {"spawns": 1, "rule_matches": 1, "rule_cheaper": 0, "rule_pricier": 0}
    for key in ("subagent:haiku", "subagent:opus", "subagent:sonnet", "main:opus"):
        scope, family = key.split(":")
        assert r["by_tier"][key]["tokens"] == by_hand(scope, family), key
    # priced by hand: haiku 5.5 at 0.10 / 0.50 / 0.125 / 0.20 / 0.01 USD per MTok
    t = r["by_tier"]["subagent:haiku"]["tokens"]
    assert t == {"input": 902, "output": 94, "cache_write_5m": 908, "cache_write_1h": 19, "cache_read": 9006}
    assert r["by_tier"]["subagent:haiku"]["cost_usd"] == pytest.approx(
        (902 * 0.10 + 94 * 0.50 + 908 * 0.125 + 19 * 0.20 + 9006 * 0.01) / 1e6, abs=1e-6)
    assert r["by_tier"]["subagent:haiku"]["spawns"] == 1 and r["by_tier"]["subagent:opus"]["spawns"] == 2
    # usual mix = the spawns without a hint (one opus, one sonnet); the followed spawn was opus
    s = r["savings"]
    assert s["usual_mix"] == {"haiku": 0.0, "sonnet": 0.5, "opus": 0.5, "fable": 0.0}
    opus_rates, sonnet_rates = PRICES.models["claude-opus-5-5"], PRICES.models["claude-sonnet-5-5"]
    msg3 = {"input": 301, "output": 32, "cache_write_5m": 304, "cache_write_1h": 8, "cache_read": 3003}

    def cost(rates):
        return sum(msg3[b] * rates[b] for b in msg3) / 1e6
    assert s["realised_usd"] == pytest.approx(0.5 * cost(sonnet_rates) + 0.5 * cost(opus_rates) - cost(opus_rates),
                                              abs=1e-6)
    # overhead: 3 sessions × 128 plugin tokens at opus cache-read, plus the hint line at opus input
    hint = session("hinted")["prompts"][0]["hint_text"]
    assert s["hint_overhead_usd"] == pytest.approx(3 * 128 * 0.20 / 1e6 + (len(hint) // 4) * 4.0 / 1e6, abs=1e-6)
    assert r["unpriced_models"] == [] and r["next"]


def test_the_report_carries_no_prompt_text():
    code, out, _ = run_cli("report", "--projects", str(DATA / "projects"), "--log", str(DATA / "routing.jsonl"),
                           "--since", "3650d", "--json")
    assert code == 0
    text = json.dumps(out[0])
    for one in EXPECTED["sessions"].values():
        for prompt in one["prompts"]:
            assert prompt["text"][:30] not in text


def test_duplicates_resumes_missing_usage_and_a_truncated_line(tmp_path):
    def response(uid: str, msg: str, ts: str, model: str, tokens: int, **extra) -> dict:
        return envelope(uid, ts, type="assistant", message={
            "id": msg, "model": model, "content": [{"type": "text", "text": "ok"}],
            "usage": {"input_tokens": tokens, "output_tokens": 1, "cache_read_input_tokens": 0,
                      "cache_creation_input_tokens": 0}}, **extra)
    prompt = envelope("p1", "2026-01-01T10:00:00Z", type="user", promptId="pp1",
                      message={"role": "user", "content": "Please refactor the parser module carefully"})
    hint = envelope("h1", "2026-01-01T10:00:00.5Z", type="attachment", attachment={
        "type": "hook_additional_context", "hookEvent": "UserPromptSubmit",
        "content": ["System-1 routing hint: this task reads as no design → subagent model: sonnet"]})
    records = [prompt, hint,
               response("a1", "m1", "2026-01-01T10:00:01Z", "claude-opus-5-5", 100, apiBlockIndex=0),
               response("a2", "m1", "2026-01-01T10:00:01Z", "claude-opus-5-5", 100, apiBlockIndex=1),  # same response
               envelope("a3", "2026-01-01T10:00:02Z", type="assistant",
                        message={"id": "m2", "model": "claude-opus-5-5", "content": []}),  # no usage at all
               spawn("toolu_x", "2026-01-01T10:00:03Z", "Refactor", "Refactor the parser", model="sonnet")]
    write_session(tmp_path, records, raw_tail=b'{"type":"assistant","message":{"id":"m9","usa')  # cut short
    write_session(tmp_path, records, name="5e55104d-0000-4000-8000-0000000000aa")  # a resumed copy
    r = report_of(tmp_path)
    main = r["by_tier"]["main:opus"]["tokens"]
    assert main["input"] == 100 + 100  # m1 once (not per block, not per copy) + the spawn's response (100)
    assert r["prompts"] == 1 and r["hinted"] == 1  # the resumed copy's prompt and hint are the same records
    assert tier_in_hint("System-1 routing hint: x → subagent model: haiku") == "haiku"
    assert tier_in_hint("System-1 routing hint: x → subagent model: gpt") is None
    assert r["spawns"] == 1  # the copied spawn is one spawn


def test_a_prompt_that_quotes_the_hint_is_not_a_hint(tmp_path):
    prompt = envelope("p1", "2026-01-01T10:00:00Z", type="user", promptId="pp1", message={
        "role": "user", "content": "Why did I get 'System-1 routing hint: … → subagent model: opus' yesterday?"})
    write_session(tmp_path, [prompt])
    r = report_of(tmp_path)
    assert (r["prompts"], r["hinted"]) == (1, 0)


def test_prices_longest_key_at_a_separator_and_user_overrides(tmp_path):
    assert PRICES.rates("claude-sonnet-5-5-20261001") == PRICES.models["claude-sonnet-5-5"]
    assert PRICES.rates("claude-sonnet-5-20260601") == PRICES.models["claude-sonnet-5"]
    assert PRICES.rates("claude-sonnet-55") is None and PRICES.rates("gpt-9") is None
    bad = tmp_path / "prices.json"
    bad.write_text(json.dumps({"models": {"claude-x": {"input": 1, "output": -2, "cache_write_5m": 1,
                                                        "cache_write_1h": 1, "cache_read": 1}}}))
    with pytest.raises(price_mod.PriceError, match=r"models.claude-x.output: expected a price"):
        price_mod.load(bad)
    code, _, err = run_cli("report", "--projects", str(DATA / "projects"), "--prices", str(bad))
    assert code == 2 and "models.claude-x.output" in err
    user = tmp_path / "state" / "prices.json"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(json.dumps({"date": "2027-01-01", "source": "mine", "tiers": {},
                                "models": {"claude-opus-5-5": {"input": 0, "output": 0, "cache_write_5m": 0,
                                                               "cache_write_1h": 0, "cache_read": 0}}}))
    code, out, _ = run_cli("report", "--projects", str(DATA / "projects"), "--since", "3650d", "--json")
    assert out[0]["prices"]["date"] == "2027-01-01" and out[0]["by_tier"]["main:opus"]["cost_usd"] == 0
    assert "claude-haiku-5-5" in out[0]["unpriced_models"]


@pytest.mark.parametrize("args, message", [
    (["--since", "soon"], "--since: expected an age such as 30d"),
    (["--projects", "/nonexistent"], "--projects: /nonexistent is not a directory"),
    (["--log", "/nonexistent.jsonl"], "--log: /nonexistent.jsonl does not exist"),
])
def test_bad_input_names_the_flag(args, message):
    code, _, err = run_cli("report", *args)
    assert code == 2 and message in err


def test_no_transcripts_is_a_report_not_a_crash(tmp_path):
    code, out, _ = run_cli("report", "--projects", str(tmp_path), "--json")
    assert code == 0 and out[0]["prompts"] == 0 and "No prompts" in out[0]["next"]
    assert summarize(Facts(), PRICES)["reach"] is None


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_the_html_page_renders_its_charts_in_headless_chromium(tmp_path):
    require(chromium() is not None, "chromium (Debian package)")
    page = tmp_path / "report.html"
    code, _, err = run_cli("report", "--projects", str(DATA / "projects"), "--log", str(DATA / "routing.jsonl"),
                           "--since", "3650d", "--html", str(page))
    assert code == 0, err
    flags = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    dom = subprocess.run([*flags, "--virtual-time-budget=3000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert 'data-charts-loaded="2"' in dom  # both chart images decoded in the browser
    for title in ("Subagent cost by tier over time", "Reach and adherence", "Cost by tier"):
        assert title in dom
    shot = tmp_path / "shot.png"
    subprocess.run([*flags, "--window-size=1100,1900", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120)
    import matplotlib.image as mpimg

    pixels = mpimg.imread(shot)[..., :3]
    assert pixels.shape[0] >= 1800
    # the charts are colour: count the strongly coloured pixels (bars, lines), not greys
    colourful = (pixels.max(axis=2) - pixels.min(axis=2)) > 0.25
    assert colourful.mean() > 0.02, colourful.mean()
    # and not a blank page: plenty of non-white
    assert (pixels.mean(axis=2) < 0.9).mean() > 0.05


def test_spawns_the_hook_set_are_measured_against_what_would_have_run(tmp_path):
    """Two spawns the Agent hook set to haiku (the log's set_model, joined by tool_use_id): the
    one that succeeded saved opus − haiku on its own tokens (opus: the spawning loop's model, as
    no model was asked for); the one that failed is lost whole. Neither counts as under a hint."""
    from test_outcomes import SESSION, launched, notified

    def usage(uid: str, msg: str, model: str) -> dict:
        return envelope(uid, "2026-01-01T10:00:05Z", type="assistant", message={
            "id": msg, "model": model, "content": [{"type": "text", "text": "ok"}],
            "usage": {"input_tokens": 1000, "output_tokens": 100, "cache_read_input_tokens": 0,
                      "cache_creation_input_tokens": 0}})
    prompt = envelope("p1", "2026-01-01T10:00:00Z", type="user", promptId="pp1",
                      message={"role": "user", "content": "List the modules and their public functions please"})
    records = [prompt,
               spawn("toolu_ok", "2026-01-01T10:00:01Z", "List modules", "List the modules under src/"),
               launched("toolu_ok", "2026-01-01T10:00:02Z", "agOK"),
               spawn("toolu_bad", "2026-01-01T10:00:01Z", "List tests", "List the tests under tests/"),
               launched("toolu_bad", "2026-01-01T10:00:02Z", "agBAD"),
               notified("toolu_ok", "2026-01-01T10:01:00Z", "agOK", "completed", "Done."),
               notified("toolu_bad", "2026-01-01T10:01:00Z", "agBAD", "failed")]
    main = write_session(tmp_path, records)
    subagents = main.parent / SESSION / "subagents"
    subagents.mkdir(parents=True)
    for agent in ("agOK", "agBAD"):
        (subagents / f"agent-{agent}.jsonl").write_bytes(
            json.dumps(usage(f"s-{agent}", f"m-{agent}", "claude-haiku-5-5"), separators=(",", ":")).encode() + b"\n")
    log = tmp_path / "routing.jsonl"
    log.write_text("".join(json.dumps({"source": "agent", "tool_use_id": t, "set_model": "haiku", "mode": "set"},
                                      separators=(",", ":")) + "\n" for t in ("toolu_ok", "toolu_bad")))
    r = report_of(tmp_path, log)
    st = r["set"]
    assert (st["spawns"], st["ran_as_set"], st["succeeded"], st["failed"], st["failure_rate"]) == (2, 2, 1, 1, 0.5)
    assert st["by_tier"] == {"haiku": 2} and st["baselines"] == {"asked_or_parent": 1, "usual_mix": 0, "unpriced": 0}
    tokens = {"input": 1000, "output": 100, "cache_write_5m": 0, "cache_write_1h": 0, "cache_read": 0}

    def cost(model: str) -> float:
        return sum(tokens[b] * PRICES.models[model][b] for b in tokens) / 1e6
    assert st["realised_usd"] == pytest.approx(cost("claude-opus-5-5") - cost("claude-haiku-5-5"), abs=1e-6)
    assert st["failed_cost_usd"] == pytest.approx(cost("claude-haiku-5-5"), abs=1e-6)
    assert st["net_usd"] == pytest.approx(st["realised_usd"] - st["failed_cost_usd"], abs=1e-6)
    assert r["spawns_under_hint"] == 0 and r["savings"]["set_net_usd"] == st["net_usd"]
    # a human outcome label in the log wins over the transcript's evidence
    log.write_text(log.read_text().replace('"toolu_bad","set_model"', '"toolu_bad","outcome":"succeeded","set_model"'))
    assert report_of(tmp_path, log)["set"]["failed"] == 0


def test_the_report_counts_the_permission_prompts_approve_answered(tmp_path):
    """`[guard] approve`'s log lines (metadata only): prompts answered `allow` and by which
    rules, prompts left to the user; lines before --since are not counted."""
    log = tmp_path / "routing.jsonl"
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    rows = [{"ts": now, "source": "approve", "decision": "allow", "rules": ["git", "ls"]},
            {"ts": now, "source": "approve", "decision": "allow", "rules": ["ls"]},
            {"ts": now, "source": "approve", "decision": None, "rules": [], "why_not": "a redirection to a file"},
            {"ts": "2001-01-01T00:00:00Z", "source": "approve", "decision": "allow", "rules": ["cat"]},
            {"ts": now, "source": "guard", "decision": "ask"}]
    log.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))  # as routing_log writes
    code, out, _ = run_cli("report", "--projects", str(tmp_path), "--log", str(log), "--since", "30d", "--json")
    assert code == 0
    assert out[0]["approvals"] == {"prompts": 3, "answered": 2, "left_to_user": 1, "share_answered": 0.6667,
                                   "by_rule": {"ls": 2, "git": 1}}
    code, _, err = run_cli("report", "--projects", str(tmp_path), "--log", str(log), "--since", "30d")
    assert code == 0
