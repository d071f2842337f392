"""`system1 teach`: labelled lines in, a head on disk, the engine answering with it.

Real embeddings (the fast tier ships in the base install); `--no-baseline` keeps the
accurate tier out except in the one test that compares against it (marked `models`).
"""

import json
from pathlib import Path

import pytest

from conftest import ROOT, run_cli
from system1_gateway.config.settings import Config, GatewaySettings
from system1_gateway.core.gateway import Gateway
from system1_gateway.providers.embedded import EmbeddedProvider

BILLING = {"type": "noul", "instructions": "Is this support message about billing?",
           "criteria": {"true": "Billing: charges, invoices, refunds, payment methods, plans and prices.",
                        "false": "Not billing: bugs, features, accounts, performance or anything else."}}
YES = ["I was charged twice for my subscription this month", "Where can I download last year's invoices?",
       "Please refund the annual plan, I cancelled on day two", "My credit card expired, how do I update it?",
       "Why did the price of the team plan go up?", "The receipt shows the wrong VAT number",
       "Can I pay by bank transfer instead of card?", "You billed me after I downgraded to free",
       "Is there a discount for nonprofits?", "The payment failed but the money left my account",
       "How do I switch from monthly to yearly billing?", "I need a copy of invoice INV-2291 with our address",
       "Your checkout page rejected my PayPal payment", "Can you explain the extra seat charge on my bill?",
       "Cancel auto-renewal before I'm charged again"]
NO = ["The app crashes when I open the settings page", "How do I export my notes as markdown?",
      "Dark mode makes the sidebar text unreadable", "I can't log in after resetting my password",
      "Sync between my phone and laptop stopped working", "Please add keyboard shortcuts for tables",
      "The search is very slow on large workspaces", "How do I invite a colleague to my project?",
      "Images fail to upload when they are larger than 5 MB", "Can I change my username?",
      "The API returns 500 for the /tasks endpoint", "Notifications arrive twice on Android",
      "Is there a Linux desktop client?", "My calendar integration shows the wrong time zone",
      "The editor loses my cursor position after saving"]


def labels_file(tmp_path, lines=None, name="labels.jsonl"):
    lines = lines if lines is not None else (
        [{"state": t, "question": BILLING, "expected": True, "task": "billing"} for t in YES]
        + [{"state": t, "question": BILLING, "expected": False, "task": "billing"} for t in NO])
    path = tmp_path / name
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def test_teach_fits_writes_and_the_engine_answers_with_the_head(tmp_path):
    code, (summary,), err = run_cli("teach", str(labels_file(tmp_path)), "--no-baseline", "--k", "3")
    assert code == 0, err
    assert summary["lines_accepted"] == 30 and summary["lines_rejected"] == 0
    (q,) = summary["questions"]
    assert q["name"] == "billing" and q["labels"] == 30 and q["error"] is None
    assert q["head_cv"]["accuracy"] >= 0.8  # 3-fold, held out
    assert 0 <= q["head_cv"]["ece"] <= 1 and q["temperature"] > 0
    assert "billing" in err and "head acc" in err  # the rich table, on stderr
    path = tmp_path / "state" / "heads" / f"{q['hash']}.npz"
    assert q["head"] == str(path) and path.exists()

    provider = EmbeddedProvider("embedded", {"tier": "fast"})
    gw = Gateway(Config(gateway=GatewaySettings(provider="embedded")), providers={"embedded": provider})
    yes = gw.judge({"state": "I want my money back for the duplicate charge", "questions": {"b": BILLING}})
    no = gw.judge({"state": "The export button does nothing in Firefox", "questions": {"b": BILLING}})
    assert yes["model"] == "head:billing" and yes["answers"]["b"]["calibrated"] is True
    assert yes["answers"]["b"]["p_true"] > 0.5 > no["answers"]["b"]["p_true"]

    code, (listed,), _ = run_cli("teach", "--list")
    mine = [h for h in listed["heads"] if h["origin"] == "user"]
    assert [h["name"] for h in mine] == ["billing"] and mine[0]["trained_on"] == 30
    assert {h["builtin"] for h in listed["heads"] if h["origin"] == "shipped"} >= {"system1/destructive@1", "system1/destructive@2"}

    code, (exported,), _ = run_cli("teach", "--export", str(tmp_path / "team"))
    assert code == 0 and exported["exported"] == [str(tmp_path / "team" / path.name)]

    code, (removed,), _ = run_cli("teach", "--remove", q["hash"][:8])
    assert code == 0 and removed["removed"] == [str(path)] and not path.exists()
    again = gw.judge({"state": "refund please", "questions": {"b": BILLING}})
    assert again["model"] != "head:billing"  # back to zero-shot


def test_teach_names_bad_lines_and_skips_none_silently(tmp_path):
    good = [{"state": t, "question": BILLING, "expected": i < 15} for i, t in enumerate(YES + NO)]
    path = labels_file(tmp_path, [*good[:3], "{not json", {"state": "x", "question": BILLING},
                                  {"state": "x", "question": BILLING, "expected": "maybe"},
                                  {"state": "x", "question": {"type": "noul"}, "expected": True},
                                  [1, 2], *good[3:]])
    code, (summary,), err = run_cli("teach", str(path), "--no-baseline", "--dry-run", "--k", "3")
    assert code == 2  # heads were fitted, but lines were rejected: said in the exit code
    assert summary["lines_accepted"] == 30 and summary["lines_rejected"] == 5
    rejected = summary["rejected"]
    assert rejected[0].startswith(f"{path}:4: invalid JSON")
    assert rejected[1] == f"{path}:5: missing expected"
    assert rejected[2].startswith(f"{path}:6: expected: 'maybe' is not true or false")
    assert rejected[3].startswith(f"{path}:7: question") and "instructions or a described outcome" in rejected[3]
    assert rejected[4] == f"{path}:8: expected a JSON object with state, question, expected"
    assert "rejected" in err
    assert summary["questions"][0]["head"] is None  # dry run: nothing written
    assert not (tmp_path / "state" / "heads").exists()


def test_teach_refuses_groups_it_cannot_fit_and_says_why(tmp_path):
    choice = {"type": "choice", "instructions": "Which team?", "criteria": {"web": "the website", "api": "the API"}}
    other_criteria = {**BILLING, "criteria": {"true": "Money.", "false": "Not money."}}
    lines = ([{"state": f"few {i}", "question": {"type": "noul", "instructions": "Tiny?"}, "expected": bool(i % 2)}
              for i in range(12)]
             + [{"state": f"all yes {i}", "question": {"type": "noul", "instructions": "One class?"}, "expected": True}
                for i in range(25)]
             + [{"state": f"billing {i}", "question": BILLING, "expected": True} for i in range(10)]
             + [{"state": f"money {i}", "question": other_criteria, "expected": False} for i in range(10)]
             + [{"state": "the login page", "question": choice, "expected": "mobile"}])
    code, (summary,), _ = run_cli("teach", str(labels_file(tmp_path, lines)), "--no-baseline")
    assert code == 2
    errors = {q["name"]: q["error"] for q in summary["questions"]}
    assert any("12 labels; a head needs at least 20 (8 more)" in e for e in errors.values())
    assert any("every label is 'true'; a head needs at least 2 classes" in e for e in errors.values())
    mixed = [e for e in errors.values() if "same instructions appear with 2 different criteria" in e]
    assert len(mixed) == 2 and "lines 38–47" in mixed[0]
    assert any("'mobile' is not one of the labels (web, api)" in r for r in summary["rejected"])
    assert all(q["head"] is None for q in summary["questions"])


def test_teach_on_choice_and_score_questions(tmp_path):
    area = {"type": "choice", "instructions": "Which area is this about?",
            "criteria": {"ui": "screens and styling", "data": "database and queries", "ops": "deploys and servers"}}
    texts = {"ui": ["make the button blue", "the modal overlaps the header", "fix the CSS grid on mobile",
                    "add a dark theme toggle", "align the form labels", "the font is too small on the login page",
                    "animate the sidebar", "the dropdown is cut off"],
             "data": ["add an index on orders.created_at", "the migration fails on the users table",
                      "write a query for monthly revenue", "drop the unused column", "normalise the address table",
                      "the join is slow", "backfill the new column", "add a foreign key to payments"],
             "ops": ["the deploy to staging failed", "rotate the TLS certificate", "scale the workers to 6",
                     "the server ran out of disk", "set up a canary release", "restart the nginx pods",
                     "add a health check to the load balancer", "the CI runner is offline"]}
    lines = [{"state": t, "question": area, "expected": label} for label, ts in texts.items() for t in ts]
    urgency = {"type": "score", "instructions": "How urgent?", "criteria": ["later", "soon", "now"]}
    lines += [{"state": f"{w} issue number {i}", "question": urgency, "expected": lvl}
              for i in range(8) for lvl, w in enumerate(["cosmetic", "annoying", "outage"])]
    code, (summary,), err = run_cli("teach", str(labels_file(tmp_path, lines)), "--no-baseline", "--k", "4")
    assert code == 0, err
    by_type = {q["labels"]: q for q in summary["questions"]}
    assert set(by_type) == {24}
    assert all(q["head_cv"]["accuracy"] > 0.6 for q in summary["questions"])
    provider = EmbeddedProvider("embedded", {"tier": "fast"})
    gw = Gateway(Config(gateway=GatewaySettings(provider="embedded")), providers={"embedded": provider})
    result = gw.judge({"state": "the checkout page font is tiny", "questions": {"a": area, "u": urgency},
                       "min_confidence": 0})
    assert result["answers"]["a"]["choice"] == "ui"
    assert set(result["answers"]["u"]["probabilities"]) == {"0", "1", "2"}
    assert result["model"].count("head:q-") == 2  # no task names in these lines: named by hash


def test_teach_usage_errors(tmp_path):
    code, (out,), _ = run_cli("teach")
    assert code == 2 and "give a labels file" in out["error"]["message"]
    code, (out,), _ = run_cli("teach", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "cannot read" in out["error"]["message"]
    code, (out,), _ = run_cli("teach", "--remove", "ab")
    assert code == 2 and "at least 4 characters" in out["error"]["message"]
    code, (out,), _ = run_cli("teach", "--remove", "abcdef")
    assert code == 2 and "no head of yours matches" in out["error"]["message"]


def test_remove_and_export_stay_where_they_belong(tmp_path):
    """`--remove ../../x` globbed `heads/../../x*.npz` and deleted files outside
    heads/; an absolute path was a traceback. Only a hash prefix is accepted, and --export
    gives a clear error for a target it cannot use."""
    heads = tmp_path / "state" / "heads"
    heads.mkdir(parents=True)
    outside = tmp_path / "x1234.npz"
    outside.write_bytes(b"not a head of the gateway's")
    from system1_gateway.learn import teach

    assert teach.heads_dir() == heads
    for prefix in ("../../x1234", "../x1234", "x1234", "****", "abcd/../../x", "ABCDEF12", "a" * 17):
        with pytest.raises(teach.LabelError, match="is not a question hash"):
            teach.remove(prefix)
    with pytest.raises(teach.LabelError, match="heads folder itself"):
        teach.export(heads)
    code, (out,), err = run_cli("teach", "--remove", str(tmp_path / "x1234"))  # absolute: was a traceback
    assert code == 2 and "is not a question hash" in out["error"]["message"] and "Traceback" not in err
    code, (out,), err = run_cli("teach", "--export", str(outside))
    assert code == 2 and "is a file, not a folder" in out["error"]["message"] and "Traceback" not in err
    assert outside.read_bytes() == b"not a head of the gateway's"


@pytest.mark.models
def test_teach_compares_with_the_zero_shot_engine(tmp_path, prejoined):
    from conftest import require
    from system1_gateway.providers.embedded import assets

    require(assets.llm_available(), "the accurate tier (pip install '.[local]')")
    prejoined()  # the session's joined GGUF
    code, (summary,), err = run_cli("teach", str(labels_file(tmp_path)), "--k", "3", "--dry-run", timeout=600)
    assert code == 0, err
    (q,) = summary["questions"]
    zs, head = q["zero_shot"], q["head_cv"]
    assert zs["n"] == head["n"] == 30  # the same items
    assert 0 <= zs["accuracy"] <= 1 and 0 <= zs["ece"] <= 1
    assert 0 <= q["cascade_cv"]["accuracy"] <= 1 and 0 <= q["cascade_cv"]["escalated"] <= 1
    # installed only when the head (or its cascade) beats zero-shot, what answers this question today
    best = max(head["accuracy"], q["cascade_cv"]["accuracy"])
    assert q["current"]["answerer"] == "zero-shot engine" and q["current"]["accuracy"] == zs["accuracy"]
    assert (q["error"] is None) == (best > zs["accuracy"])
    assert q["error"] is None or "what answers today (zero-shot engine)" in q["error"]


DEV_BUILTINS = ROOT / "data" / "heads" / "dev" / "dev_builtins.jsonl"


def test_teach_never_replaces_a_better_head_and_adapts_the_existing_one(tmp_path):
    """The dev labels of the built-ins once replaced the shipped heads (trained on
    ~1,000 labels each) by heads made from 40-70 labels. Now the candidates (a new head, the
    shipped head adapted to the labels) must beat the shipped head on the same items."""
    rows = [json.loads(line) for line in DEV_BUILTINS.read_text().splitlines() if line.strip()]
    path = tmp_path / "builtins.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows if r["task"] in ("destructive", "review")))
    code, (summary,), err = run_cli("teach", str(path), "--k", "3", "--no-baseline", timeout=600)
    by_name = {q["name"]: q for q in summary["questions"]}
    assert set(by_name) == {"destructive", "review"}, err
    for q in by_name.values():
        assert q["current"]["answerer"].startswith("shipped head ")
        assert q["adapted_cv"]["n"] == q["head_cv"]["n"] == q["current"]["n"] == q["labels"]  # the same items
        beaten = q["candidate"]["accuracy"] > q["current"]["accuracy"]
        assert (q["head"] is not None) == beaten, q
        if not beaten:
            assert q["error"].startswith("not installed: what answers today (shipped head")
    assert code == (0 if all(q["head"] for q in by_name.values()) else 3)  # valid input: not exit 2
    assert not any((tmp_path / "state" / "heads").glob("*.npz")) or code == 0
    # --force installs the better candidate anyway, and says which kind it is
    code, (forced,), err = run_cli("teach", str(path), "--k", "3", "--no-baseline", "--force", timeout=600)
    assert code == 0, err
    for q in forced["questions"]:
        assert q["head"] and q["candidate"]["kind"] in ("new", "adapted")
    from system1_gateway.providers.embedded.heads import Head

    heads = {Head.load(Path(q["head"])).meta["training"]["adapted_from"] for q in forced["questions"]}
    assert heads <= {None, "destructive@1", "destructive@2", "review@1"}
