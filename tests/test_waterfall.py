"""The fault matrix: every failure class of a real HTTP engine, through the whole waterfall.

Chain: `fault` (a systemone rung on a local fault-injection engine) → `mock`. Each case checks
the first attempt's outcome, whether and how long the rung cools, that the next rung
answers, the attempts list, and the elapsed time against the deadline."""

import json
import time

import pytest

from fault_engine import FaultEngine, closed_port
from system1_gateway.core.gateway import Gateway
from system1_gateway.model.results import judge_result_adapter

DEADLINE_S = 2.0
TIMEOUT_S = 1.0
QUESTIONS = {
    "d": {"type": "yesno", "instructions": "Is it destructive?"},
    "t": {"type": "choice", "instructions": "Which tool?", "criteria": {"run_shell": "run it", "read_file": None}},
    "u": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "mid", "high"]},
}


@pytest.fixture
def engine():
    srv = FaultEngine()
    yield srv
    srv.close()


def gateway_for(write_config, url, extra=""):
    write_config(
        f'[gateway]\nprovider = "fault"\nfallback = ["mock"]\ntimeout_s = {TIMEOUT_S}\ndeadline_s = {DEADLINE_S}\n'
        f'[providers.fault]\nkind = "systemone"\nendpoint = "{url}"\nmodel = "fault-1"\n{extra}'
    )
    return Gateway.from_environment()


def run(gateway):
    t0 = time.perf_counter()
    result = gateway.judge({"state": "rm -rf build/", "questions": QUESTIONS})
    return result, time.perf_counter() - t0


def test_healthy_engine_answers_every_type(write_config, engine):
    gateway = gateway_for(write_config, engine.url)
    result, _ = run(gateway)
    judge_result_adapter.validate_python(result)
    assert result["provider"] == "fault" and result["model"] == "fault-1"
    assert result["answers"]["d"]["p_true"] == 0.8 and result["answers"]["t"]["choice"] == "run_shell"
    assert result["answers"]["t"]["engine_confidence"] == 0.7 and result["answers"]["u"]["level"] == 0
    assert result["usage"] == {"input_tokens": 40, "output_tokens": 2}
    sent = engine.requests[0]
    assert sent["model"] == "fault-1" and sent["questions"]["d"]["type"] == "noul"  # alias normalised on the wire


# mode → (attempt outcome, cooling seconds or None, words in the detail)
MATRIX = {
    "hang": ("timeout", None, "no answer within"),
    "drip": ("timeout", None, "body still arriving"),  # the adapter bounds every socket read by the deadline
    "429": ("error", 7, "HTTP 429"),
    "529": ("error", 4.5, "HTTP 529: overloaded"),
    "503": ("error", 30, "HTTP 503: model loading"),
    "401": ("error", 300, "HTTP 401: invalid api key"),
    "402": ("error", 300, "HTTP 402"),
    "400_credits": ("error", 300, "credits are exhausted"),
    "500": ("error", 30, "HTTP 500"),
    "invalid_json": ("malformed", None, "not a JSON object"),
    "wrong_model": ("malformed", None, "expected 'fault-1'"),
    "not_argmax": ("malformed", None, "is not the most probable label"),
    "partial": ("malformed", None, "missing"),
    # A misconfigured rung is unusable, not a refusal of this request: advance and cool.
    "404_route": ("error", 300, "no such route"),
    "404_model": ("error", 300, "model 'fault-1' not found"),
    "301": ("error", 300, "redirected to https://127.0.0.1:9/v1/systemone"),
    # An unreadable Retry-After is ignored (the default cooldown), never an internal error.
    "429_bad_retry_after": ("error", 30, "HTTP 429: slow down"),
    "401_bad_retry_after": ("error", 300, "HTTP 401: invalid api key"),
    # A body past max_response_bytes is cut as it arrives (on the wire and as it inflates): a
    # clear error that cools like a server fault, never 12 MiB held in memory.
    "huge": ("error", 30, "response larger than max_response_bytes (8388608 bytes)"),
    "huge_gzip": ("error", 30, "response larger than max_response_bytes (8388608 bytes)"),
}


@pytest.mark.parametrize("mode", list(MATRIX))
def test_fault_matrix(write_config, engine, mode):
    outcome, cools, words = MATRIX[mode]
    engine.mode = mode
    gateway = gateway_for(write_config, engine.url, 'expect_model = "fault-1"\n')
    result, elapsed = run(gateway)
    judge_result_adapter.validate_python(result)
    assert result["status"] == "answered" and result["provider"] == "mock", result
    first, second = result["attempts"]
    assert (first["provider"], first["outcome"]) == ("fault", outcome)
    assert words in first["detail"], first
    assert second == {**second, "provider": "mock", "outcome": "ok"}
    assert elapsed <= DEADLINE_S + 0.05
    active = {c.rung: c for c in gateway.state.active()}
    if cools is None:
        assert "fault" not in active
    else:
        assert cools - 1.5 <= active["fault"].remaining_s <= cools
    assert result["usage"] == {"input_tokens": None, "output_tokens": None}  # mock reports none: stays null


def test_connection_refused_is_transport_and_cools(write_config):
    gateway = gateway_for(write_config, f"http://127.0.0.1:{closed_port()}")
    result, elapsed = run(gateway)
    first = result["attempts"][0]
    assert first["outcome"] == "error" and "transport failure" in first["detail"] and result["provider"] == "mock"
    (cooling,) = gateway.state.active()
    assert 28 <= cooling.remaining_s <= 30 and elapsed < DEADLINE_S


def test_engine_rejection_does_not_advance(write_config, engine):
    engine.mode = "422"
    gateway = gateway_for(write_config, engine.url)
    result, _ = run(gateway)
    assert result["status"] == "error" and result["error"]["code"] == "provider_error"
    assert "state: too long" in result["error"]["message"]
    assert [a["provider"] for a in result["attempts"]] == ["fault"]
    assert gateway.state.active() == []


def test_single_rung_hang_retries_once_and_meets_the_deadline(write_config, engine):
    engine.mode = "hang"
    write_config(f'[gateway]\nprovider = "fault"\ntimeout_s = 0.6\ndeadline_s = 1.5\n'
                 f'[providers.fault]\nkind = "systemone"\nendpoint = "{engine.url}"\nmodel = "fault-1"\n')
    t0 = time.perf_counter()
    result = Gateway.from_environment().judge({"state": "s", "questions": QUESTIONS})
    elapsed = time.perf_counter() - t0
    assert result["error"]["code"] == "provider_timeout"
    assert [a["outcome"] for a in result["attempts"]] == ["timeout", "timeout"]
    assert elapsed <= 1.5 + 0.05


def test_bearer_key_from_the_environment_never_leaks(write_config, engine, monkeypatch):
    monkeypatch.setenv("FAULT_KEY", "sk-secret-123")
    gateway = gateway_for(write_config, engine.url, 'api_key_env = "FAULT_KEY"\n')
    result, _ = run(gateway)
    assert result["provider"] == "fault"
    sent = {k.lower(): v for k, v in engine.headers[0].items()}
    assert sent["authorization"] == "Bearer sk-secret-123"
    engine.mode = "401"
    failed, _ = run(gateway)
    assert "sk-secret-123" not in str(failed)
    monkeypatch.delenv("FAULT_KEY")
    gateway.state.clear()
    missing, _ = run(gateway)
    assert "environment variable FAULT_KEY is not set" in missing["attempts"][0]["detail"]


def test_a_key_echoed_by_the_engine_is_scrubbed_everywhere(write_config, engine, monkeypatch, tmp_path):
    key = "k3y-" + "Zq9" * 6  # no known key prefix: only the rung's own key tells it apart
    monkeypatch.setenv("FAULT_KEY", key)
    engine.mode = "401_echo"
    gateway = gateway_for(write_config, engine.url, 'api_key_env = "FAULT_KEY"\n')
    result, _ = run(gateway)
    detail = result["attempts"][0]["detail"]
    assert "invalid key Bearer [redacted]" in detail and "raw=[redacted]" in detail
    state_files = b"".join(p.read_bytes() for p in (tmp_path / "state").rglob("*") if p.is_file())
    for where in (json.dumps(result), json.dumps(gateway.status()), state_files.decode("latin-1")):
        assert key not in where


@pytest.mark.parametrize("settings, expected", [
    ('api_key = "sk-1"\n', "secrets are never read from the config file"),
    ('', "is not a loopback address"),
])
def test_unsafe_settings_are_refused(write_config, settings, expected):
    url = "http://10.1.2.3:9" if not settings else "http://127.0.0.1:9"
    gateway = gateway_for(write_config, url, settings)
    result, _ = run(gateway)
    assert expected in result["attempts"][0]["detail"] and result["provider"] == "mock"


def test_adapter_cuts_a_slow_drip_body_at_its_own_deadline(engine):
    from system1_gateway.model.errors import ProviderTimeout
    from system1_gateway.model.requests import parse_judge
    from system1_gateway.providers.systemone import SystemOneProvider

    engine.mode = "drip"
    provider = SystemOneProvider("fault", {"endpoint": engine.url, "model": "fault-1"})
    t0 = time.perf_counter()
    with pytest.raises(ProviderTimeout, match="body still arriving"):
        provider.judge(parse_judge({"state": "s", "questions": QUESTIONS}), 0.5)
    assert time.perf_counter() - t0 < 0.5 + 0.3  # one drip interval past the deadline at most


def test_health_probe_and_closed_port(engine):
    from system1_gateway.providers.systemone import SystemOneProvider

    assert SystemOneProvider("fault", {"endpoint": engine.url, "model": "m"}).health(1.0).ok
    t0 = time.perf_counter()
    down = SystemOneProvider("x", {"endpoint": f"http://127.0.0.1:{closed_port()}", "model": "m"}).health(1.0)
    assert not down.ok and "unreachable" in down.detail and time.perf_counter() - t0 < 1.0


def test_name_resolution_ends_by_the_deadline(write_config, engine, monkeypatch):
    """Resolving a host name ends by the attempt's deadline (inside socket.create_connection
    it is unbounded: a 2 s deadline took 10 s behind a slow resolver), and a name that
    resolves is connected to."""
    import socket

    real = socket.getaddrinfo

    def slow_for_one_name(host, *args, **kwargs):
        if host == "slow-dns.test":
            time.sleep(6)  # a resolver that takes its time (the thread ends by itself)
        return real("127.0.0.1" if host in ("slow-dns.test", "fast-dns.test") else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow_for_one_name)
    gateway = gateway_for(write_config, f"http://slow-dns.test:{engine.port}", "allow_remote = true\n")
    result, elapsed = run(gateway)
    first = result["attempts"][0]
    assert first["outcome"] == "error" and "ConnectTimeout" in first["detail"], first
    assert result["provider"] == "mock" and elapsed <= DEADLINE_S + 0.1, elapsed
    resolved = gateway_for(write_config, f"http://fast-dns.test:{engine.port}", "allow_remote = true\n")
    result, _ = run(resolved)
    assert result["provider"] == "fault", result["attempts"]
