"""Cooldowns: durations per failure class, shared state, one re-try after expiry, toggle."""

import json
import subprocess
import sys
import time

import pytest

from conftest import judge_payload
from system1_gateway import store as cd
from system1_gateway.core.gateway import Gateway
from system1_gateway.store import SQLiteStore, cooldown_for


@pytest.mark.parametrize("kind, retry_after, expected", [
    ("credentials", None, 300), ("quota", None, 300), ("model", None, 300),
    ("rate_limit", None, 30), ("overload", None, 30), ("transport", None, 30), ("server", None, 30),
    ("rate_limit", 12, 12), ("overload", 7.5, 7.5), ("rate_limit", 9999, 300), ("credentials", 5, 300),
    ("timeout", None, None), ("malformed", None, None), ("unsupported", None, None), ("engine", None, None),
])
def test_cooldown_durations(kind, retry_after, expected):
    assert cooldown_for(kind, retry_after) == expected


def test_recooling_keeps_the_later_expiry(tmp_path):
    store = SQLiteStore(tmp_path / "s.db")
    first = store.cool("laya", "laya", 300, "quota")
    second = store.cool("laya", "laya", 30, "rate limit")
    assert second.until == pytest.approx(first.until) and second.reason == "quota"
    third = store.cool("laya", "laya", 600, "credentials")
    assert third.until > first.until and third.reason == "credentials"


def test_expiry_lets_exactly_one_request_retry(tmp_path, monkeypatch):
    store = SQLiteStore(tmp_path / "s.db")
    other_process = SQLiteStore(tmp_path / "s.db")
    store.cool("r", "r", 1.0, "transport")  # long enough that a busy machine still sees it cooling
    assert isinstance(store.check(("r",)), cd.Cooling)
    time.sleep(1.05)
    assert store.check(("r",)) is True  # this request re-tries
    assert isinstance(other_process.check(("r",)), cd.Cooling)  # the others wait for its outcome
    assert store.recovered(("r",)) and other_process.check(("r",)) is False


def test_corrupt_state_file_falls_back_to_memory(tmp_path, caplog):
    path = tmp_path / "s.db"
    path.write_bytes(b"this is not a sqlite database" * 100)
    store = SQLiteStore(path)
    assert store.check(("r",)) is False
    store.cool("r", "r", 30, "transport")
    assert isinstance(store.check(("r",)), cd.Cooling)
    assert store.describe()["ok"] is False and "unusable" in store.describe()["detail"]
    assert sum("unusable" in r.message for r in caplog.records) == 1  # warned once


def test_cooling_rung_is_skipped_and_the_next_answers(write_config):
    write_config('[gateway]\nprovider = "a"\nfallback = ["mock"]\n[providers.a]\nkind = "mock"\nmode = "fail"\nfailure = "quota"\n')
    gateway = Gateway.from_environment()
    first = gateway.judge(judge_payload())
    assert [(a["provider"], a["outcome"]) for a in first["attempts"]] == [("a", "error"), ("mock", "ok")]
    second = gateway.judge(judge_payload())
    assert [(a["provider"], a["outcome"]) for a in second["attempts"]] == [("a", "cooling"), ("mock", "ok")]
    assert "quota" in second["attempts"][0]["detail"] and second["provider"] == "mock"
    (cooling,) = gateway.state.active()
    assert cooling.rung == "a" and 295 < cooling.remaining_s <= 300


def test_all_cooling_names_the_soonest_return(write_config):
    write_config('[gateway]\nprovider = "a"\nfallback = ["b"]\n'
                 '[providers.a]\nkind = "mock"\nmode = "fail"\nfailure = "credentials"\n'
                 '[providers.b]\nkind = "mock"\nmode = "fail"\nfailure = "rate_limit"\n')
    gateway = Gateway.from_environment()
    assert gateway.judge(judge_payload())["error"]["code"] == "provider_error"
    result = gateway.judge(judge_payload())
    assert result["error"]["code"] == "all_cooling"
    message = result["error"]["message"]
    assert "soonest back is 'b'" in message and ("(in 30 s)" in message or "(in 29 s)" in message)
    assert [a["outcome"] for a in result["attempts"]] == ["cooling", "cooling"]


def test_timeouts_and_malformed_answers_do_not_cool(mock_gateway, monkeypatch):
    monkeypatch.setenv("SYSTEM1_TIMEOUT_S", "0.05")
    gateway = mock_gateway(mode="timeout")
    gateway.judge(judge_payload())
    assert gateway.state.active() == []
    malformed = mock_gateway(mode="malformed")
    malformed.judge(judge_payload())
    assert malformed.state.active() == []


def test_toggle_pauses_from_the_next_request(mock_gateway):
    from system1_gateway import toggle

    gateway = mock_gateway()
    assert gateway.decide({"question": "ok?"})["status"] == "decided"
    toggle.set_paused(True)
    paused = gateway.decide({"question": "ok?"})
    assert paused["status"] == "abstained" and paused["abstain_reason"] == "paused" and paused["attempts"] == []
    judged = gateway.judge(judge_payload())
    assert all(a["abstain_reason"] == "paused" for a in judged["answers"].values())
    toggle.set_paused(False)
    assert gateway.decide({"question": "ok?"})["status"] == "decided"


WORKER = """
import sys
from system1_gateway.core.gateway import Gateway
g = Gateway.from_environment()
errors = 0
for i in range(50):
    r = g.judge({"state": "s", "questions": {"q": {"type": "noul", "instructions": "?"}}})
    if r["status"] != "answered" or r["provider"] != "mock":
        errors += 1
print(errors)
"""


def test_eight_processes_share_the_cooldown_state(write_config, tmp_path):
    write_config('[gateway]\nprovider = "bad"\nfallback = ["mock"]\n[providers.bad]\nkind = "mock"\nmode = "fail"\nfailure = "transport"\n')
    import os

    procs = [subprocess.Popen([sys.executable, "-c", WORKER], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy()) for _ in range(8)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
    assert [o[0].strip() for o in outs] == ["0"] * 8
    stderr = "".join(o[1] for o in outs)
    assert "database is locked" not in stderr and "unusable" not in stderr
    records = [json.loads(line) for line in (tmp_path / "state" / "logs" / "audit.jsonl").read_text().splitlines()]
    tried_bad = sum(1 for r in records if ["bad", "error"] in r["outcomes"])
    assert len(records) == 400 and 1 <= tried_bad <= 8  # the rung cooled after (at most) one failure per process race
    (cooling,) = SQLiteStore(tmp_path / "state" / "state.db").active()
    assert cooling.rung == "bad" and cooling.reason.startswith("transport")


def test_per_request_deadline_overrides_the_configured_one(write_config):
    write_config('[gateway]\nprovider = "slow"\nfallback = ["mock"]\ntimeout_s = 5\ndeadline_s = 8\n'
                 '[providers.slow]\nkind = "mock"\nmode = "timeout"\n')
    t0 = time.perf_counter()
    result = Gateway.from_environment().judge({**judge_payload(), "deadline_s": 0.4})
    elapsed = time.perf_counter() - t0
    assert elapsed <= 0.4 + 0.05 and result["provider"] == "mock"
    assert result["attempts"][0]["outcome"] == "timeout" and result["attempts"][0]["latency_ms"] < 250


def test_notices_are_deduplicated_for_a_minute(caplog):
    from system1_gateway import notices

    caplog.set_level("WARNING")
    key = f"test:{time.time()}"
    assert notices.notice(key, "rung %s failed", "x") is True
    assert notices.notice(key, "rung %s failed", "x") is False
    assert sum("rung x failed" in r.message for r in caplog.records) == 1
