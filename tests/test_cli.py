"""The `system1` command as a user runs it: JSON on stdout, exit codes, JSON Lines streaming."""

import json
import os
import subprocess
import sys

import pytest

from conftest import judge_payload, run_cli
from system1_gateway.model.results import decide_response_adapter, judge_result_adapter

MOCK = {"SYSTEM1_PROVIDER": "mock"}


def test_decide_prints_one_json_object_and_exits_0():
    code, out, err = run_cli("decide", "Is `rm -rf build/` destructive?", env=MOCK)
    assert code == 0 and len(out) == 1
    decide_response_adapter.validate_python(out[0])
    assert out[0]["status"] == "decided" and out[0]["decision"] in ("yes", "no")


def test_decide_flags_reach_the_request():
    proc = subprocess.run(
        [sys.executable, "-m", "system1_gateway.cli", "decide", "Which tool next?", "--options", "read_file", "run_shell",
         "--context", '{"step": 3}', "--min-confidence", "0.95", "--request-id", "cli-1", "--pretty"],
        capture_output=True, text=True, env={**os.environ, **MOCK},
    )
    result = json.loads(proc.stdout)
    assert proc.returncode == 0 and proc.stdout.startswith("{\n  ")
    assert result["request_id"] == "cli-1" and result["status"] == "abstained"
    assert set(result["probabilities"]) == {"read_file", "run_shell"}


@pytest.mark.parametrize(
    "args, expected",
    [
        (["decide", "q", "--options", "a"], "options: List should have at least 2 items"),
        (["decide", "q", "--context", "{nope"], "--context: invalid JSON"),
        (["decide", "q", "--min-confidence", "x"], "argument --min-confidence: invalid float value"),
        (["decide", "q", "--frobnicate"], "unrecognized arguments: --frobnicate"),
        (["bogus"], "invalid choice: 'bogus'"),
        (["judge", "/no/such/file.json"], "/no/such/file.json: cannot read"),
        (["decide", "q", "--provider", "nosuch"], "--provider: 'nosuch' is not a configured rung"),
    ],
)
def test_invalid_input_exits_2_with_a_json_error(args, expected):
    code, out, _ = run_cli(*args, env=MOCK)
    assert code == 2 and out[-1]["error"]["code"] == "invalid_request"
    assert expected in out[-1]["error"]["message"]


def test_judge_from_stdin_and_file(tmp_path):
    payload = judge_payload()
    code, out, _ = run_cli("judge", input=json.dumps(payload), env=MOCK)
    assert code == 0
    judge_result_adapter.validate_python(out[0])
    path = tmp_path / "req.json"
    path.write_text(json.dumps(payload))
    code, out2, _ = run_cli("judge", str(path), env=MOCK)
    assert code == 0 and out2[0]["answers"] == out[0]["answers"]


def test_judge_bad_json_and_schema_violation_exit_2():
    code, out, _ = run_cli("judge", input="{not json", env=MOCK)
    assert code == 2 and "stdin: invalid JSON" in out[0]["error"]["message"]
    code, out, _ = run_cli("judge", input='{"state": "s"}', env=MOCK)
    assert code == 2 and "questions: required field is missing" in out[0]["error"]["message"]


def test_chain_failure_exits_1_and_notices_go_to_stderr():
    code, out, err = run_cli("judge", input=json.dumps(judge_payload()), env={**MOCK, "SYSTEM1_MOCK_MODE": "fail"})
    assert code == 1 and out[0]["error"]["code"] == "provider_error"
    assert "rung mock failed" in err


def test_config_error_exits_1(tmp_path):
    bad = tmp_path / "c.toml"
    bad.write_text("[gateway]\ntimeout_s = 'x'\n")
    code, out, _ = run_cli("decide", "ok?", env={"SYSTEM1_CONFIG": str(bad)})
    assert code == 1 and out[0]["error"]["code"] == "config_error" and "timeout_s" in out[0]["error"]["message"]
    code, out, _ = run_cli("health", env={"SYSTEM1_CONFIG": str(bad)})
    assert code == 1 and out[0]["status"] == "down"


def test_jsonl_streams_one_result_per_line_in_order():
    requests = [judge_payload() | {"request_id": f"r{i}"} for i in range(3)]
    lines = [json.dumps(requests[0]), "", "{broken", json.dumps({"state": "s"}), json.dumps(requests[1]), json.dumps(requests[2])]
    code, out, _ = run_cli("judge", "--jsonl", input="\n".join(lines) + "\n", env=MOCK)
    assert code == 2  # one line was invalid; the others were still answered
    assert [o.get("request_id") for o in out] == ["r0", None, out[2]["request_id"], "r1", "r2"]
    assert "line 3: invalid JSON" in out[1]["error"]["message"]
    assert out[2]["error"]["message"].startswith("line 4: questions: required")
    assert all(out[i]["status"] == "answered" for i in (0, 3, 4))


def test_jsonl_answers_each_line_before_the_next_arrives():
    proc = subprocess.Popen(
        [sys.executable, "-m", "system1_gateway.cli", "judge", "--jsonl"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **MOCK},
    )
    try:
        for i in range(3):
            proc.stdin.write(json.dumps(judge_payload() | {"request_id": f"s{i}"}) + "\n")
            proc.stdin.flush()
            assert json.loads(proc.stdout.readline())["request_id"] == f"s{i}"
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()


def test_health_and_capabilities():
    code, out, _ = run_cli("health", env=MOCK)
    assert code == 0 and out[0]["status"] == "ok" and out[0]["providers"][0]["provider"] == "mock"
    code, out, _ = run_cli("health", env={**MOCK, "SYSTEM1_MOCK_MODE": "fail"})
    assert code == 1 and out[0]["status"] == "down"
    code, out, _ = run_cli("capabilities", env=MOCK)
    caps = out[0]
    assert code == 0 and caps["provider_chain"] == ["mock"] and caps["thresholds"]["min_confidence"] == 0.6
    assert set(caps["schemas"]) == {"judge_request", "judge_result", "decide_request", "decide_response"}
    assert caps["version"] and caps["schema_versions"] == {"judge": "1", "decide": "1"}


def test_version_flag():
    proc = subprocess.run([sys.executable, "-m", "system1_gateway.cli", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("system1-gateway ")


def test_a_judge_file_that_is_not_utf8_is_invalid_input(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"state": "caf\xe9", "questions": {}}')
    code, out, err = run_cli("judge", str(bad), env={"SYSTEM1_PROVIDER": "mock"})
    assert code == 2 and "Traceback" not in err
    assert out[0]["error"]["code"] == "invalid_request" and "not UTF-8 text (byte 14" in out[0]["error"]["message"]


def test_jsonl_keeps_judging_after_a_line_that_is_not_utf8(tmp_path):
    good = json.dumps(judge_payload()).encode()
    code, out, _ = run_cli_bytes(["judge", "--jsonl"], good + b"\n\xff\xfe\n" + good + b"\n")
    assert code == 2 and len(out) == 3
    assert out[0]["status"] == out[2]["status"] == "answered"
    assert "line 2: not UTF-8" in out[1]["error"]["message"]


def test_a_lone_surrogate_is_invalid_input_not_a_crash():
    payload = '{"state": "s", "request_id": "\\ud800x", "questions": {"q": {"type": "noul", "instructions": "?"}}}'
    code, out, err = run_cli("judge", input=payload, env={"SYSTEM1_PROVIDER": "mock"})
    assert code == 2 and "Traceback" not in err
    assert out[0]["error"]["code"] == "invalid_request" and out[0]["request_id"] != "\ud800x"


def test_deeply_nested_context_is_invalid_not_a_crash():
    deep = "[" * 20_000 + "]" * 20_000
    code, out, err = run_cli("decide", "ok?", "--context", deep, env={"SYSTEM1_PROVIDER": "mock"})
    assert code == 2 and "Traceback" not in err and out[0]["error"]["code"] == "invalid_request"


def run_cli_bytes(args, data):
    import os
    import subprocess
    import sys

    env = {**os.environ, "SYSTEM1_PROVIDER": "mock"}
    proc = subprocess.run([sys.executable, "-m", "system1_gateway.cli", *args], input=data,
                          capture_output=True, env=env, timeout=120)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines() if line.strip()], proc.stderr


# -- --chain: this call's rung order -----------------------------------------------------------
CHAIN_CONFIG = ('[gateway]\nprovider = "first"\nfallback = ["second"]\n'
                '[providers.first]\nkind = "mock"\nmode = "fail"\n'
                '[providers.second]\nkind = "mock"\nmodel = "second-model"\nanswer = "no"\n'
                '[providers.third]\nkind = "mock"\nmodel = "third-model"\nanswer = "yes"\n')


def test_chain_flag_sets_the_order_of_one_call(write_config):
    write_config(CHAIN_CONFIG)
    code, out, _ = run_cli("judge", "--chain", "first,third", input=json.dumps(judge_payload()))
    assert code == 0 and out[0]["provider"] == "third" and out[0]["order"] == ["first", "third"]
    assert [(a["provider"], a["outcome"]) for a in out[0]["attempts"]] == [("first", "error"), ("third", "ok")]
    code, out, _ = run_cli("decide", "ok?", "--chain", "third,second")
    assert code == 0 and out[0]["decision"] == "yes" and [a["provider"] for a in out[0]["attempts"]] == ["third"]
    code, out, _ = run_cli("decide", "ok?", "--provider", "second,third")  # --provider takes a list too
    assert code == 0 and out[0]["decision"] == "no" and out[0]["provider"] == "second"
    code, out, _ = run_cli("judge", "--chain", "first", input=json.dumps(judge_payload()))
    assert code == 1 and out[0]["order"] == ["first"] and out[0]["error"]["code"] == "provider_error"


@pytest.mark.parametrize("args, expected", [
    (["--chain", "second,second"], "--chain: lists 'second' twice (expected each rung once)"),
    (["--chain", "second,,third"], "--chain: entry 2 of 'second,,third' is empty (expected rung names"),
    (["--chain", ""], "--chain: empty (expected rung names separated by commas"),
    (["--chain", "third,nosuch"], "--chain: 'nosuch' is not a configured rung (a call may name only"),
    (["--provider", "third,third"], "--provider: lists 'third' twice"),
    (["--chain", "third", "--provider", "second"], "argument --provider: not allowed with argument --chain"),
])
@pytest.mark.parametrize("command", ["decide", "judge"])
def test_a_bad_chain_exits_2_naming_the_flag(write_config, command, args, expected):
    write_config(CHAIN_CONFIG)
    argv = ["decide", "ok?", *args] if command == "decide" else ["judge", *args]
    code, out, _ = run_cli(*argv, input=json.dumps(judge_payload()))
    assert code == 2 and len(out) == 1 and out[0]["error"]["code"] == "invalid_request"
    assert expected in out[0]["error"]["message"]


def test_a_chain_flag_names_configured_rungs_only(write_config):
    """`--chain laya` without a [providers.laya] table is exit 2, nothing built."""
    write_config(CHAIN_CONFIG)
    code, out, _ = run_cli("judge", "--chain", "laya", input=json.dumps(judge_payload()),
                           env={"SYSTEM1_LAYA_API_KEY": "k" * 20})
    assert code == 2 and out[0]["error"]["message"].startswith("--chain: 'laya' is not a configured rung")


def test_a_billed_rung_in_a_chain_without_consent_is_skipped(write_config):
    write_config(CHAIN_CONFIG)
    code, out, err = run_cli("judge", "--chain", "openai,third", input=json.dumps(judge_payload()),
                             env={"SYSTEM1_OPENAI_API_KEY": "sk-test-abcdefgh"})
    assert code == 0 and out[0]["provider"] == "third" and out[0]["order"] == ["openai", "third"]
    skipped = out[0]["attempts"][0]
    assert skipped["provider"] == "openai" and skipped["outcome"] == "skipped"
    assert "no billing consent recorded for 'openai'" in skipped["detail"] and "skipped" in err


def test_status_reports_on_a_chain_without_asking_an_engine(write_config):
    write_config(CHAIN_CONFIG)
    code, out, _ = run_cli("status", "--chain", "openai,third")
    assert code == 0 and out[0]["order"] == ["openai", "third"] and set(out[0]["rungs"]) == {"openai", "third"}
    assert out[0]["rungs"]["openai"]["blocked"].startswith("no billing consent")
    assert out[0]["preferred_start"] == "openai" and out[0]["actual_start"] == "third"
    assert out[0]["today"]["requests"] == 0  # a report, not a request
    code, out, _ = run_cli("status")
    assert code == 0 and out[0]["order"] == ["first", "second"]
    assert out[0]["guard"] == {"enabled": False, "approve": "off"}  # the prompt-answering mode, off by default
    write_config(CHAIN_CONFIG + '\n[guard]\napprove = "read-only"\n')
    assert run_cli("status")[1][0]["guard"] == {"enabled": False, "approve": "read-only"}
    code, out, _ = run_cli("status", "--chain", "third,third")
    assert code == 2 and out[0]["error"]["message"] == "--chain: lists 'third' twice (expected each rung once)"


# -- install-pi ----------------------------------------------------------------------------------
@pytest.fixture
def pi_source(monkeypatch, tmp_path):
    """A stand-in for the shipped extension (tests never write under src/)."""
    from system1_gateway import pi_install

    source = tmp_path / "shipped" / "pi_extension"
    monkeypatch.setattr(pi_install, "source", lambda: source)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    return source


def test_install_pi_prints_where_and_applies_a_fresh_copy(pi_source, tmp_path, capsys):
    from system1_gateway import cli

    (pi_source / "lib").mkdir(parents=True)
    (pi_source / "index.ts").write_text("export default function () {}\n")
    (pi_source / "lib" / "core.ts").write_text("// v2\n")
    target = tmp_path / "agent" / "extensions" / "system1"
    assert cli.main(["install-pi"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown == {"installed": False, "would_install": str(target), "source": str(pi_source)}
    assert not target.exists()
    target.mkdir(parents=True)  # an older copy, with a file the new one no longer has
    (target / "index.ts").write_text("// v1\n")
    (target / "stale.ts").write_text("// gone in v2\n")
    assert cli.main(["install-pi", "--apply"]) == 0
    assert json.loads(capsys.readouterr().out) == {"installed": True, "path": str(target), "source": str(pi_source)}
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*")) == ["index.ts", "lib", "lib/core.ts"]
    assert (target / "index.ts").read_text() == "export default function () {}\n"
    assert [p.name for p in target.parent.iterdir()] == ["system1"]  # no staging directory left behind


def test_install_pi_without_the_extension_says_so(pi_source, capsys):
    from system1_gateway import cli

    for argv in (["install-pi"], ["install-pi", "--apply"]):
        assert cli.main(argv) == 1
        out = json.loads(capsys.readouterr().out)
        assert out["installed"] is False and out["error"]["code"] == "not_found"
        assert f"the Pi extension directory {pi_source} does not exist" in out["error"]["message"]
    pi_source.mkdir(parents=True)
    assert cli.main(["install-pi"]) == 1
    assert f"{pi_source} has no index.ts" in json.loads(capsys.readouterr().out)["error"]["message"]
