"""Calibration (SPEC §6): the fits in force and how the core applies them; fitting on known
distributions; `system1 calibrate` non-interactive and through a pty (keys in, file out)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run_cli
from system1_gateway.core.calibration import Calibration, FitRecord, scale
from system1_gateway.core.gateway import Gateway
from system1_gateway.learn import calibration_fit as cf
from system1_gateway.learn.pending import LabelStore, from_routing_log
from system1_gateway.model import builtins

Q = {"type": "noul", "instructions": "Is this about a build?"}
Q_HASH = builtins.question_hash("noul", Q["instructions"], None)


def fits_file(path: Path, *fits: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": 1, "fits": list(fits)}))
    return path


def fit(**kw) -> dict:
    return {"provider": "mock", "model": "mock-1", "temperature": 2.0, "n": 120, **kw}


def user_file(tmp_path) -> Path:
    return tmp_path / "state" / "calibration.json"


# -- the layer ----------------------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.001, 1.0), min_size=2, max_size=8), st.floats(0.05, 20))
def test_scaling_never_changes_the_winner_and_keeps_a_distribution(weights, temperature):
    total = sum(weights)
    probs = {str(i): w / total for i, w in enumerate(weights)}
    out = scale(probs, temperature)
    assert abs(sum(out.values()) - 1) < 1e-9
    winner = max(probs, key=probs.__getitem__)
    assert out[winner] >= max(out.values()) - 1e-12  # still the most probable (ties: to float precision)
    # the numpy path `calibrate` fits with is the same function
    arr = cf.apply_temperature(np.array([list(probs.values())]), temperature)[0]
    assert np.allclose(arr, list(out.values()), atol=1e-9)


def test_a_temperature_above_one_cools_below_one_sharpens():
    p = {"true": 0.9, "false": 0.1}
    assert scale(p, 2.0)["true"] == pytest.approx(0.75, abs=1e-9)  # 3:1 from 9:1
    assert scale(p, 0.5)["true"] > 0.98
    assert scale(p, 1.0) == p


def test_lookup_order_user_over_shipped_question_over_options_other_models_ignored(tmp_path):
    shipped = fits_file(tmp_path / "shipped.json", fit(question=Q_HASH, temperature=3.0),
                        fit(provider="mock", options=2, temperature=4.0))
    user = fits_file(tmp_path / "user.json", fit(options=2, temperature=1.5),
                     fit(model="mock-2", question=Q_HASH, temperature=9.0))
    cal = Calibration(user=user, shipped=shipped)
    found = cal.find(("mine", "mock"), "mock-1", Q_HASH, 2)
    assert (found.source, found.record.scope, found.temperature) == ("user", "options", 1.5)
    assert cal.find(("mine", "mock"), "mock-1", Q_HASH, 3).temperature == 3.0  # shipped, exact question
    assert cal.find(("mine", "mock"), "mock-9", Q_HASH, 2) is None  # a fit for another model is ignored
    assert cal.find(("mine", "other-kind"), "mock-1", Q_HASH, 2) is None
    assert Calibration.off().find(("mock",), "mock-1", Q_HASH, 2) is None


def test_a_broken_user_file_is_reported_and_ignored_and_a_fixed_one_is_picked_up(tmp_path, monkeypatch):
    import system1_gateway.core.calibration as calibration

    monkeypatch.setattr(calibration, "RECHECK_S", 0.0)
    user = tmp_path / "user.json"
    user.write_text('{"format": 1, "fits": [{"provider": "mock", "model": "m", "temperature": -1, "n": 80, '
                    '"options": 2}]}')
    cal = Calibration(user=user, shipped=None)
    assert cal.find(("mock",), "m", Q_HASH, 2) is None
    assert "fits.0.temperature" in cal.summary()["errors"]["user"]
    fits_file(user, fit(model="m", options=2, temperature=2.0, n=60))
    found = cal.find(("mock",), "m", Q_HASH, 2)
    assert found.temperature == 2.0 and found.info()["provisional"] is True
    assert cal.summary()["errors"] == {}


@pytest.mark.parametrize("bad, where", [
    ({"provider": "mock", "model": "m", "temperature": 1.0, "n": 80}, "exactly one of"),
    ({"provider": "mock", "model": "m", "temperature": 1.0, "n": 10, "options": 2}, "n"),
    ({"provider": "mock", "model": "m", "temperature": 1.0, "n": 80, "question": "XYZ"}, "question"),
    ({"provider": "mock", "model": "m", "temperature": 1.0, "n": 80, "options": 2, "extra": 1}, "extra"),
])
def test_fit_records_are_checked_field_by_field(bad, where):
    with pytest.raises(Exception) as info:
        FitRecord.model_validate(bad)
    assert where in str(info.value)


def test_the_core_applies_the_fit_before_the_threshold_and_says_which(mock_gateway, tmp_path, monkeypatch):
    import system1_gateway.core.calibration as calibration

    monkeypatch.setattr(calibration, "RECHECK_S", 0.0)
    fits_file(user_file(tmp_path), fit(question=Q_HASH, temperature=2.0, threshold=0.8))
    gw = mock_gateway(confidence=0.9, answer="true")
    result = gw.judge({"state": "x", "questions": {"q": Q}})
    answer = result["answers"]["q"]
    assert answer["p_true"] == pytest.approx(0.75, abs=1e-6) and answer["confidence"] == pytest.approx(0.75, abs=1e-6)
    assert answer["calibrated"] is True and answer["model"] == "mock-1"
    assert answer["calibration"] == {"source": "user", "scope": "question", "temperature": 2.0, "n": 120,
                                     "provisional": True, "threshold": 0.8}
    # the fitted threshold (0.8) replaces the configured 0.6: 0.75 abstains
    assert answer["abstained"] is True and answer["abstain_reason"] == "below_threshold"
    # a request's own min_confidence wins over the fitted one
    again = gw.judge({"state": "x", "questions": {"q": Q}, "min_confidence": 0.7})["answers"]["q"]
    assert again["abstained"] is False
    # another question (no fit): untouched, configured threshold
    other = gw.judge({"state": "x", "questions": {"q": {"type": "noul", "instructions": "Other?"}}})["answers"]["q"]
    assert other["calibrated"] is False and other["calibration"] is None and other["confidence"] == 0.9
    # decide asks a yes/no choice: a fit for any 2-option question of this model reaches it
    fits_file(user_file(tmp_path), fit(question=Q_HASH, temperature=2.0, threshold=0.8), fit(options=2))
    decided = gw.decide({"question": "Is this about a build?", "min_confidence": 0.7})
    assert decided["calibrated"] is True and decided["calibration"]["temperature"] == 2.0
    from system1_gateway.model.results import DecideResponse, JudgeResult

    JudgeResult.model_validate(result)
    DecideResponse.model_validate(decided)
    assert gw.status()["calibration"]["user_fits"] == 2


def test_choice_and_score_answers_keep_their_winner_and_the_score_follows(mock_gateway, tmp_path):
    fits_file(user_file(tmp_path), fit(options=3, temperature=3.0))
    gw = mock_gateway(confidence=0.8)
    questions = {"c": {"type": "choice", "instructions": "Which?", "criteria": ["a", "b", "c"]},
                 "s": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "mid", "high"]}}
    raw = Gateway(gw.config, calibration=Calibration.off()).judge({"state": "x", "questions": questions})
    cal = gw.judge({"state": "x", "questions": questions})
    assert cal["answers"]["c"]["choice"] == raw["answers"]["c"]["choice"]
    assert cal["answers"]["s"]["level"] == raw["answers"]["s"]["level"]
    assert cal["answers"]["c"]["confidence"] < raw["answers"]["c"]["confidence"]
    probs = cal["answers"]["s"]["probabilities"]
    assert cal["answers"]["s"]["score"] == pytest.approx(sum(int(k) * p for k, p in probs.items()), abs=1e-3)


# -- fitting on known distributions ---------------------------------------------------------------

def _source(n: int, sharpen: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A calibrated yes/no source (right with probability = its confidence), then sharpened
    by 1/`sharpen` (an over-confident engine when sharpen < 1)."""
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.5, 1.0, n)
    right = rng.uniform(size=n) < conf
    probs = np.stack([conf, 1 - conf], axis=1)
    y = np.where(right, 0, 1)
    return cf.apply_temperature(probs, sharpen), y


def test_a_calibrated_source_stays_put_and_an_overconfident_one_is_cooled():
    probs, y = _source(4000, 1.0)
    assert cf.fit_temperature(probs, y) == pytest.approx(1.0, abs=0.1)
    hot, y = _source(4000, 0.4)
    t = cf.fit_temperature(hot, y)
    assert t == pytest.approx(2.5, rel=0.15)
    assert (cf.apply_temperature(hot, t).argmax(1) == hot.argmax(1)).all()
    from system1_gateway.learn import metrics

    assert metrics.ece(cf.apply_temperature(hot, t), y) < metrics.ece(hot, y) / 3


def test_a_threshold_chosen_on_few_labels_promises_less_than_its_point_estimate():
    conf = np.linspace(0.5, 1.0, 60)
    right = conf > 0.62  # every answer above 0.62 is right
    pick = cf.threshold_for(conf, right, target=0.9)
    assert pick["threshold"] is not None and pick["accuracy_lower"] >= 0.9
    assert pick["accuracy"] >= pick["accuracy_lower"]
    # the point estimate alone would accept a lower bar: the bound costs coverage
    point_bar = min(b for b in conf if right[conf >= b].mean() >= 0.9)
    assert pick["threshold"] > point_bar
    # a coin-flip engine keeps no promise at any bar
    assert cf.threshold_for(conf, np.arange(60) % 2 == 0, target=0.9)["threshold"] is None


def test_fit_group_refuses_under_50_labels_and_one_class():
    g = cf.Group("mock", "m", Q_HASH, 2, "q", probs=[[0.9, 0.1]] * 49, y=[0] * 49)
    assert "1 more" in cf.fit_group(g, 0.9)["refused"]
    g = cf.Group("mock", "m", Q_HASH, 2, "q", probs=[[0.9, 0.1]] * 60, y=[0] * 60)
    assert "same answer" in cf.fit_group(g, 0.9)["refused"]


# -- the command ----------------------------------------------------------------------------------

def _labels_for_mock(tmp_path, n=80, right_share=0.6) -> Path:
    """Labels the mock engine (0.9 confident everywhere) gets right `right_share` of the time."""
    gw = Gateway(calibration=Calibration.off(), config=None)
    os.environ["SYSTEM1_PROVIDER"] = "mock"
    from system1_gateway.config.settings import load_config

    gw = Gateway(load_config(), calibration=Calibration.off())
    lines = []
    for i in range(n):
        state = f"build log {i}"
        p_true = gw.judge({"state": state, "questions": {"q": Q}})["answers"]["q"]["p_true"]
        said = p_true >= 0.5
        expected = said if i % 10 < right_share * 10 else not said
        lines.append(json.dumps({"state": state, "question": Q, "expected": expected}))
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join(lines) + "\n" + "{not json\n")
    return path


def test_calibrate_labels_apply_cools_an_overconfident_engine_and_decisions_say_so(tmp_path, monkeypatch):
    monkeypatch.setenv("SYSTEM1_PROVIDER", "mock")
    labels = _labels_for_mock(tmp_path)
    code, out, err = run_cli("calibrate", "--labels", str(labels), "--apply", "--json",
                             "--plot", str(tmp_path / "rel.png"))
    assert code == 2, err  # one rejected line: reported, the valid ones still fitted
    assert "labels.jsonl:81: invalid JSON" in err
    (group,) = [g for g in out[0]["groups"] if g["question"] == Q_HASH]
    assert group["n"] == 80 and group["temperature"] > 1.5  # 0.9 said, 0.6 right
    assert group["before"]["ece"] > 0.2 and group["after"]["ece"] < group["before"]["ece"]
    assert group["fit"]["provider"] == "mock" and group["fit"]["model"] == "mock-1"
    assert (tmp_path / "rel.png").stat().st_size > 10_000 and out[0]["plot"] == str(tmp_path / "rel.png")
    assert out[0]["applied"] is True  # the JSON comes after the write and says it happened
    saved = json.loads(user_file(tmp_path).read_text())
    assert [f["question"] for f in saved["fits"]] == [Q_HASH]
    code, out, _ = run_cli("judge", input=json.dumps({"state": "build log 3", "questions": {"q": Q}}))
    answer = out[0]["answers"]["q"]
    assert answer["calibrated"] is True and answer["confidence"] < 0.75
    assert answer["calibration"]["source"] == "user"


@pytest.mark.parametrize("args, message", [
    (["--labels", "/nonexistent.jsonl"], "--labels: /nonexistent.jsonl does not exist"),
    (["--labels", "x", "--target-accuracy", "1.5"], "--target-accuracy: expected a number in [0.5, 1)"),
    (["--log", "/nonexistent.jsonl"], "--log: /nonexistent.jsonl does not exist"),
])
def test_calibrate_bad_input_names_the_flag(args, message):
    code, _, err = run_cli("calibrate", *args)
    assert code == 2 and message in err


def test_a_broken_user_calibration_file_is_never_overwritten(tmp_path, monkeypatch):
    monkeypatch.setenv("SYSTEM1_PROVIDER", "mock")
    labels = _labels_for_mock(tmp_path)
    user_file(tmp_path).parent.mkdir(parents=True, exist_ok=True)
    user_file(tmp_path).write_text("{broken")
    code, _, err = run_cli("calibrate", "--labels", str(labels), "--apply")
    assert code == 2 and "not JSON" in err and "nothing was written" in err
    assert user_file(tmp_path).read_text() == "{broken"


def _routing_log(tmp_path) -> Path:
    path = tmp_path / "state" / "logs" / "routing.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [
        {"source": "prompt", "prompt_id": "p1", "prompt": "Explain how the retry logic decides to give up",
         "features": {n: {"answer": n == "read_only", "confidence": 0.9} for n in
                      ("read_only", "design", "review", "specified")}},
        {"source": "guard", "tool_use_id": "t1", "command": "rm -rf build",
         "features": {"destructive": {"answer": True, "confidence": 0.97}}},
        {"source": "agent", "tool_use_id": "a1", "prompt": "Fix the failing test in tests/test_x.py",
         "features": None, "outcome": "failed", "outcome_source": "auto", "outcome_doubtful": True,
         "outcome_reason": "same-role re-spawn"},
    ]
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    return path


def test_pending_lists_every_item_and_outcomes_only_when_doubtful(tmp_path):
    log = _routing_log(tmp_path)
    items = list(from_routing_log(log))
    assert [i.key for i in items] == ["prompt:p1:read_only", "prompt:p1:design", "prompt:p1:review",
                                      "prompt:p1:specified", "guard:t1:destructive", "agent:a1:read_only",
                                      "agent:a1:design", "agent:a1:review", "agent:a1:specified", "outcome:a1"]
    assert items[0].proposed == "true" and items[1].proposed == "false" and items[5].proposed is None
    assert items[-1].proposed == "failed" and items[-1].note.startswith("doubtful")
    code, out, _ = run_cli("calibrate", "--pending")
    assert code == 0 and len(out) == 10 and out[-1]["labels"] == ["succeeded", "failed"]


def _pty_run(args: list[str], keys: list[str], env: dict[str, str], ahead: bool = False) -> tuple[int, str]:
    """Run the CLI on a pseudo-terminal; type `keys` one at a time, each after the card shows
    (`ahead`: all at once, before the first card, as a fast typist does)."""
    pid, fd = pty.fork()
    if pid == 0:  # child
        os.execve(sys.executable, [sys.executable, "-m", "system1_gateway.cli", *args], env)
    out = b""
    pending = list(keys)
    if ahead:
        os.write(fd, "".join(keys).encode())
        pending = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            while pending and out.count(b"q quit") > len(keys) - len(pending):
                os.write(fd, pending.pop(0).encode())
    else:  # out of time: never leave a child waiting for keys (nor the test waiting for it)
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", out.decode("utf-8", "replace"))


def test_labelling_through_a_terminal_keys_in_file_out_undo_skip_and_resume(tmp_path):
    _routing_log(tmp_path)
    env = {**os.environ, "SYSTEM1_PROVIDER": "mock", "COLUMNS": "100"}
    # card 1 Enter (accept "true"), card 2 n (confirms "false"), card 3 y (corrects), u (undo → card 3 again),
    # n, card 4 s (skip), card 5 (guard) y, card 6 q
    code, screen = _pty_run(["calibrate"], ["\r", "n", "y", "u", "n", "s", "y", "q"], env)
    assert code == 0, screen
    assert "undone" in screen and "labelled 4 (" in screen and "run calibrate again to resume" in screen
    store = LabelStore(tmp_path / "state" / "logs" / "labels.jsonl")
    assert {k: v["label"] for k, v in store.labels.items()} == {
        "prompt:p1:read_only": "true", "prompt:p1:design": "false", "prompt:p1:review": "false",
        "guard:t1:destructive": "true"}
    assert store.labels["prompt:p1:read_only"]["by"] == "confirmed"
    assert store.labels["prompt:p1:read_only"]["prompt_id"] == "p1"  # session_start counts it as labelled
    # resume: the next run starts at the skipped item, and outcome labels use their own keys
    code, screen = _pty_run(["calibrate"], ["y", "q"], env)
    assert "1/6" in screen and "specified" in screen
    assert LabelStore(tmp_path / "state" / "logs" / "labels.jsonl").label_of("prompt:p1:specified") == "true"


def test_keys_typed_ahead_are_not_lost(tmp_path):
    _routing_log(tmp_path)
    env = {**os.environ, "SYSTEM1_PROVIDER": "mock"}
    code, screen = _pty_run(["calibrate"], ["n", "y", "q"], env, ahead=True)
    assert code == 0, screen
    store = LabelStore(tmp_path / "state" / "logs" / "labels.jsonl")
    assert [store.label_of(k) for k in ("prompt:p1:read_only", "prompt:p1:design")] == ["false", "true"]


def test_proposals_from_a_file_replace_the_engines(tmp_path):
    _routing_log(tmp_path)
    proposals = tmp_path / "proposals.jsonl"
    proposals.write_text(json.dumps({"key": "guard:t1:destructive", "label": "false"}) + "\n")
    env = {**os.environ, "SYSTEM1_PROVIDER": "mock"}
    code, screen = _pty_run(["calibrate", "--proposals", str(proposals)], ["s"] * 4 + ["\r", "q"], env)
    assert "1 proposals read" in screen
    assert LabelStore(tmp_path / "state" / "logs" / "labels.jsonl").label_of("guard:t1:destructive") == "false"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"key": "guard:t1:destructive", "label": "maybe"}) + "\n")
    code, _, err = run_cli("calibrate", "--proposals", str(bad), "--no-label")
    assert code == 2 and "bad.jsonl:1: 'maybe' is not one of ['true', 'false']" in err


# -- evaluate -------------------------------------------------------------------------------------

def _evaluation_log(tmp_path, prompts: int, failures: int, successes: int, fail_tier="haiku") -> None:
    """Prompts whose four features are labelled true, and spawns with outcomes."""
    state = tmp_path / "state" / "logs"
    state.mkdir(parents=True, exist_ok=True)
    entries, labels = [], []
    for i in range(prompts):
        entries.append({"source": "prompt", "prompt_id": f"p{i}", "prompt": f"Explain the design of module {i}"})
        labels += [{"key": f"prompt:p{i}:{n}", "label": "true" if i % 10 else "false"}
                   for n in ("read_only", "design", "review", "specified")]
    for i in range(failures + successes):
        failed = i < failures
        entries.append({"source": "agent", "tool_use_id": f"t{i}", "prompt": f"Refactor the parser, part {i}",
                        "outcome": "failed" if failed else "succeeded", "outcome_source": "auto",
                        "outcome_tier": fail_tier if failed else "opus"})
    entries.append({"source": "guard", "command": "ls"})  # not a routing entry: ignored
    (state / "routing.jsonl").write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    (state / "labels.jsonl").write_text("\n".join(json.dumps(e) for e in labels) + "\n")


def test_evaluate_ready_and_not_ready_with_exit_codes_and_hand_computed_figures(tmp_path, write_config):
    # the mock says "true" to everything at 0.9: right on 9 prompts in 10; the default rule
    # picks opus (design = true), above the haiku that failed and equal to the opus that succeeded
    write_config('[gateway]\nprovider = "mock"\n[providers.mock]\nanswer = "true"\nconfidence = 0.9\n')
    _evaluation_log(tmp_path, prompts=20, failures=4, successes=6)
    code, out, err = run_cli("evaluate", "--json", "--min-failures", "4")
    report = out[0]
    assert report["entries"] == 30 and report["unanswered"] == 0
    for name in ("read_only", "design", "review", "specified"):
        f = report["features"][name]
        assert f["n"] == 20 and f["accuracy"] == 0.9 and f["coverage"] == 1.0 and f["accuracy_at_threshold"] == 0.9
        assert f["auroc"] == 0.5 and f["threshold"] == 0.8  # one score for all: no ranking; [routing] default
    assert report["rule_with_engine"] == {"failed": 4, "succeeded": 6, "safety": 1.0, "agreement": 1.0,
                                          "savings": 0.0}
    assert report["verdict"] == "READY" and code == 0, err
    # the default bars: 30 failures needed; a 95 % feature bar fails at 90 %
    code, out, err = run_cli("evaluate", "--json", "--min-feature-accuracy", "0.95")
    assert code == 3 and out[0]["verdict"] == "NOT READY"
    reasons = " | ".join(out[0]["reasons"])
    assert "read_only: 90% accurate at the threshold 0.80 (needs 95%; n = 20)" in reasons
    assert "4 failed spawns with an outcome (needs 30" in reasons
    assert "NOT READY" in err
    # its re-asks are a measurement, not traffic: no audit line, nothing counted for today
    assert not (tmp_path / "state" / "logs" / "audit.jsonl").exists()
    code, out, _ = run_cli("status")
    assert code == 0 and out[0]["today"]["requests"] == 0, out[0]["today"]


def test_evaluate_tells_a_weak_rule_from_a_weak_engine(tmp_path, write_config):
    # failures ran on opus: no rule can pick higher: safety 0 with the engine and its ceiling
    write_config('[gateway]\nprovider = "mock"\n[providers.mock]\nanswer = "true"\nconfidence = 0.9\n')
    _evaluation_log(tmp_path, prompts=0, failures=3, successes=0, fail_tier="opus")
    code, out, _ = run_cli("evaluate", "--json", "--min-failures", "1")
    assert code == 3 and out[0]["rule_with_engine"]["safety"] == 0.0
    assert any(r.startswith("read_only: no labelled prompts") for r in out[0]["reasons"])


@pytest.mark.parametrize("args, message", [
    (["--log", "/nonexistent"], "--log: /nonexistent does not exist"),
    (["--min-safety", "2"], "--min-safety: expected a share in [0, 1], got 2.0"),
    (["--provider", "nosuch"], "nosuch"),
])
def test_evaluate_bad_input_exits_2_naming_the_flag(args, message):
    code, _, err = run_cli("evaluate", *args)
    assert code == 2 and message in err


def test_labels_confirmed_in_the_chat_are_recorded_without_the_loop(tmp_path):
    _routing_log(tmp_path)
    proposals = tmp_path / "proposals.jsonl"
    proposals.write_text(json.dumps({"key": "prompt:p1:design", "label": "true"}) + "\n"
                         + json.dumps({"key": "outcome:a1", "label": "succeeded"}) + "\n")
    code, _, err = run_cli("calibrate", "--proposals", str(proposals), "--confirmed", env={"SYSTEM1_PROVIDER": "mock"})
    assert code == 0, err
    store = LabelStore(tmp_path / "state" / "logs" / "labels.jsonl")
    assert store.label_of("prompt:p1:design") == "true" and store.label_of("outcome:a1") == "succeeded"
    assert store.labels["outcome:a1"]["by"] == "confirmed-in-chat"
    code, _, err = run_cli("calibrate", "--confirmed")
    assert code == 2 and "--confirmed: needs --proposals FILE" in err
