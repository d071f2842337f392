"""status, order, retry, toggle: the waterfall's commands as users run them."""

import json

from conftest import run_cli

COMMENTED = """# my gateway config — keep this comment
[gateway]
provider = "embedded"   # the local engine
fallback = []
timeout_s = 3.0  # tuned

# a second engine on this machine
[providers.laptop]
kind = "systemone"
endpoint = "http://127.0.0.1:8089"
model = "jev-1.13.0"   # pinned

[providers.mock]
latency_ms = 1
"""


def test_order_rewrites_only_the_two_keys(write_config):
    path = write_config(COMMENTED)
    code, out, _ = run_cli("order", "laptop", "mock", "embedded")
    assert code == 0 and out[0]["order"] == ["laptop", "mock", "embedded"]
    new = path.read_text()
    expected = COMMENTED.replace('provider = "embedded"   # the local engine', 'provider = "laptop"   # the local engine')
    expected = expected.replace("fallback = []", 'fallback = ["mock", "embedded"]')
    assert new == expected


def test_order_validates(write_config):
    path = write_config(COMMENTED)
    for args, words in ((["nosuch"], "unknown provider 'nosuch'"), (["mock", "mock"], "mock listed twice")):
        code, out, _ = run_cli("order", *args)
        assert code == 2 and words in out[0]["error"]["message"]
    assert path.read_text() == COMMENTED


def test_order_creates_a_missing_config(tmp_path, monkeypatch):
    path = tmp_path / "new" / "config.toml"
    code, out, _ = run_cli("order", "mock", env={"SYSTEM1_CONFIG": str(path)})
    assert code == 0 and 'provider = "mock"' in path.read_text()


def test_status_retry_and_toggle(write_config, monkeypatch):
    write_config('[gateway]\nprovider = "bad"\nfallback = ["keyed", "mock"]\n'
                 '[providers.bad]\nkind = "mock"\nmode = "fail"\nfailure = "quota"\n'
                 '[providers.keyed]\nkind = "systemone"\nendpoint = "http://127.0.0.1:9"\nmodel = "m"\napi_key_env = "KEYED_SECRET"\n')
    monkeypatch.setenv("KEYED_SECRET", "sk-do-not-print")
    env = {"SYSTEM1_PROVIDER": "", "KEYED_SECRET": "sk-do-not-print"}
    code, out, _ = run_cli("decide", "ok?", env=env)
    assert out[0]["provider"] == "mock"
    code, out, _ = run_cli("status", env=env)
    status = out[0]
    assert code == 0 and status["order"] == ["bad", "keyed", "mock"]
    assert status["rungs"]["keyed"]["credentials"] == {"needed": True, "present": True, "env": "KEYED_SECRET", "error": None}
    assert "sk-do-not-print" not in json.dumps(status)
    rungs_cooling = {c["rung"] for c in status["cooldowns"]}
    assert "bad" in rungs_cooling and status["preferred_start"] == "bad"
    assert status["actual_start"] in ("keyed", "mock")
    assert status["today"]["requests"] >= 1 and status["last_route"]["provider"] == "mock"
    code, out, _ = run_cli("retry")
    assert code == 0 and out[0]["cleared"] >= 1
    assert run_cli("status", env=env)[1][0]["cooldowns"] == []
    assert run_cli("toggle", "off")[1][0] == {"paused": True}
    assert run_cli("decide", "ok?", env=env)[1][0]["abstain_reason"] == "paused"
    assert run_cli("toggle", "status")[1][0] == {"paused": True}
    assert run_cli("toggle", "on")[1][0] == {"paused": False}


def test_missing_credentials_skip_the_rung_without_cooling(write_config, monkeypatch):
    write_config('[gateway]\nprovider = "keyed"\nfallback = ["mock"]\n'
                 '[providers.keyed]\nkind = "systemone"\nendpoint = "http://127.0.0.1:9"\nmodel = "m"\napi_key_env = "ABSENT_KEY"\n')
    code, out, _ = run_cli("judge", input=json.dumps({"state": "s", "questions": {"q": {"type": "noul", "instructions": "?"}}}))
    first = out[0]["attempts"][0]
    assert first == {"provider": "keyed", "outcome": "skipped", "latency_ms": 0.0,
                     "detail": "no credentials: environment variable ABSENT_KEY is not set"}
    status = run_cli("status")[1][0]
    assert status["cooldowns"] == [] and status["actual_start"] == "mock"


def test_a_rejected_order_leaves_the_file_untouched(write_config):
    path = write_config('[gateway]\ntimeout_s = -1  # broken on purpose\n')
    before = path.read_bytes()
    code, out, _ = run_cli("order", "mock")
    assert code == 2 and "timeout_s" in out[0]["error"]["message"]
    assert path.read_bytes() == before


def test_order_checks_the_file_it_writes_not_the_environment(write_config):
    path = write_config(COMMENTED)
    code, out, _ = run_cli("order", "mock", env={"SYSTEM1_TIMEOUT_S": "-1"})
    assert code == 0, out  # the override is not what is written
    assert 'provider = "mock"' in path.read_text()


def test_order_read_errors_are_clear(write_config, tmp_path):
    path = write_config("")
    path.unlink()
    path.mkdir()  # a directory where the file should be
    code, out, err = run_cli("order", "mock")
    assert code == 2 and "Traceback" not in err and "cannot read" in out[0]["error"]["message"]
    path.rmdir()
    path.write_bytes(b'[gateway]\nprovider = "caf\xe9"\n')
    code, out, err = run_cli("order", "mock")
    assert code == 2 and "Traceback" not in err and str(path) in out[0]["error"]["message"]
