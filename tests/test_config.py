"""Configuration file, environment overrides, and broken configs that must never crash."""

import pytest

from conftest import judge_payload
from system1_gateway.config.settings import load_config
from system1_gateway.core.gateway import Gateway
from system1_gateway.model.errors import ConfigError


def test_defaults_without_a_file():
    config = load_config()
    gw = config.gateway
    assert (gw.provider, gw.fallback, gw.timeout_s, gw.deadline_s, gw.min_confidence, gw.log_level, gw.log_file) == (
        "embedded", [], 5.0, 8.0, 0.6, "WARNING", None)
    assert config.source is None and config.chain == ["embedded"]


def test_file_values_and_named_instances(write_config):
    path = write_config(
        "# my gateway\n[gateway]\nprovider = \"fast\"\nfallback = [\"mock\"]\ntimeout_s = 2\n"
        "deadline_s = 3.5\nmin_confidence = 0.7\nlog_level = \"info\"\n\n"
        "[providers.fast]\nkind = \"embedded\"\ntier = \"fast\"\n[providers.mock]\nlatency_ms = 3\n"
    )
    config = load_config()
    assert config.source == path and config.chain == ["fast", "mock"]
    assert config.gateway.timeout_s == 2 and config.gateway.deadline_s == 3.5
    assert config.gateway.min_confidence == 0.7 and config.gateway.log_level == "INFO"
    assert config.kind_of("fast") == "embedded" and config.provider_settings("fast") == {"tier": "fast"}
    assert config.provider_settings("mock") == {"latency_ms": 3}


def test_environment_overrides_file(write_config, monkeypatch):
    write_config('[gateway]\nprovider = "embedded"\ntimeout_s = 2\n[providers.mock]\nlatency_ms = 3\n')
    monkeypatch.setenv("SYSTEM1_PROVIDER", "mock")
    monkeypatch.setenv("SYSTEM1_FALLBACK", "embedded, other")
    monkeypatch.setenv("SYSTEM1_TIMEOUT_S", "1.5")
    monkeypatch.setenv("SYSTEM1_DEADLINE_S", "4")
    monkeypatch.setenv("SYSTEM1_MIN_CONFIDENCE", "0.8")
    monkeypatch.setenv("SYSTEM1_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("SYSTEM1_LOG_FILE", "/tmp/x.log")
    monkeypatch.setenv("SYSTEM1_MOCK_LATENCY_MS", "7")
    monkeypatch.setenv("SYSTEM1_OTHER_KIND_IGNORED", "1")
    with pytest.raises(ConfigError, match="'other' has unknown kind"):
        load_config()
    monkeypatch.setenv("SYSTEM1_FALLBACK", "embedded")
    config = load_config()
    gw = config.gateway
    assert config.chain == ["mock", "embedded"]
    assert (gw.timeout_s, gw.deadline_s, gw.min_confidence, gw.log_level, gw.log_file) == (1.5, 4.0, 0.8, "DEBUG", "/tmp/x.log")
    assert config.provider_settings("mock") == {"latency_ms": "7"}


@pytest.mark.parametrize(
    "text, expected",
    [
        ('[gateway]\nprovider = "mock"\ntimeout_s = \n', "invalid TOML: Invalid value (at line 3, column 13)"),
        ('[gateway]\nprovider = "mock"\n\ntimeout_s = "fast"\n', "line 4, [gateway]: timeout_s: Input should be a valid number"),
        ('[gateway]\nmin_confidence = 3\n', "line 2, [gateway]: min_confidence: Input should be less than or equal to 1"),
        ('[gateway]\ntimout_s = 3\n', "line 2, [gateway]: timout_s: unknown field"),
        ('[gateway]\nlog_level = "loud"\n', "log_level: Input should be 'DEBUG', 'INFO', 'WARNING' or 'ERROR'"),
        ('[gateway]\nprovider = "nope"\n', "provider 'nope' has unknown kind 'nope'"),
        ('[gateway]\nprovider = "mock"\nfallback = ["mock"]\n', "lists 'mock' twice"),
        ('[gatway]\nprovider = "mock"\n', "unknown table or key 'gatway'"),
        ('providers = 3\n', "'providers' must contain one table per provider"),
        ('[gateway]\nprovider = ""\n', "provider: String should have at least 1 character"),
    ],
)
def test_broken_config_is_reported_with_file_line_and_key(write_config, text, expected):
    path = write_config(text)
    with pytest.raises(ConfigError) as info:
        load_config()
    assert expected in info.value.message
    assert str(path) in info.value.message or "twice" in expected


def test_bad_environment_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("SYSTEM1_DEADLINE_S", "-1")
    with pytest.raises(ConfigError, match="environment variable SYSTEM1_DEADLINE_S: deadline_s"):
        load_config()


def test_missing_explicit_config_file(monkeypatch, tmp_path):
    monkeypatch.setenv("SYSTEM1_CONFIG", str(tmp_path / "absent.toml"))
    with pytest.raises(ConfigError, match="does not exist"):
        load_config()


def test_broken_config_never_crashes_the_gateway(write_config):
    write_config("[gateway\nprovider=")
    gateway = Gateway.from_environment()
    result = gateway.judge(judge_payload())
    assert result["status"] == "error" and result["error"]["code"] == "config_error"
    assert "invalid TOML" in result["error"]["message"]
    decided = gateway.decide({"question": "ok?"})
    assert decided["error"]["code"] == "config_error"
    health = gateway.health()
    assert health["status"] == "down" and "invalid TOML" in health["reason"]
    caps = gateway.capabilities()
    assert caps["config_error"] and caps["schemas"]["judge_request"]


def test_unreadable_config_is_a_config_error(write_config):
    path = write_config("")
    path.write_bytes(b"\xff\xfe[gateway]")
    with pytest.raises(ConfigError, match="cannot read"):
        load_config()


def test_example_config_is_valid_and_documents_every_key(monkeypatch):
    from conftest import ROOT
    from system1_gateway.config.settings import GATEWAY_ENV, GatewaySettings

    example = ROOT / "config.example.toml"
    monkeypatch.setenv("SYSTEM1_CONFIG", str(example))
    config = load_config()
    text = example.read_text()
    for key in GatewaySettings.model_fields:
        assert f"{key} =" in text, key
    for var in GATEWAY_ENV.values():
        assert var in text, var
    assert config.chain[0] == "embedded"


def test_credential_variables_are_not_settings(monkeypatch):
    monkeypatch.setenv("SYSTEM1_LAYA_API_KEY", "sk-1")
    monkeypatch.setenv("SYSTEM1_LAYA_MODEL", "english")
    assert load_config().provider_settings("laya") == {"model": "english"}


def test_serve_table_defaults_file_and_environment(write_config, monkeypatch):
    from system1_gateway.config.settings import load_config

    monkeypatch.delenv("SYSTEM1_SERVE_PORT")  # conftest: 0 (any free port)
    assert load_config().serve.port == 8737 and load_config().serve.autostart is False  # conftest: 0
    write_config('[serve]\nport = 9001\nidle_exit_min = 5\napi_key_env = "TEAM_KEY"\n')
    monkeypatch.setenv("SYSTEM1_SERVE_HOST", "0.0.0.0")
    serve = load_config().serve
    assert (serve.port, serve.idle_exit_min, serve.api_key_env, serve.host) == (9001, 5, "TEAM_KEY", "0.0.0.0")


def test_serve_errors_name_the_line_or_the_variable(write_config, monkeypatch):
    import pytest

    from system1_gateway.config.settings import load_config
    from system1_gateway.model.errors import ConfigError

    monkeypatch.delenv("SYSTEM1_SERVE_PORT")  # conftest: 0, which would win over the file
    write_config('[serve]\nhost = "127.0.0.1"\nport = 70000\n')
    with pytest.raises(ConfigError, match=r"line 3, \[serve\].*port"):
        load_config()
    write_config('[serve]\napi_key_env = "sk-live-123"\n')
    with pytest.raises(ConfigError, match="api_key_env"):
        load_config()
    write_config("")
    monkeypatch.setenv("SYSTEM1_SERVE_AUTOSTART", "maybe")
    with pytest.raises(ConfigError, match="SYSTEM1_SERVE_AUTOSTART"):
        load_config()
