"""Configuration (docs/configuration.md): a TOML file, every key optional, environment variables win.

Loading never raises past `load_config`'s caller-facing contract: a broken file becomes a
ConfigError whose message names the file, the line and the key, and the gateway turns it
into `config_error` answers and a `down` health instead of crashing.
"""

from __future__ import annotations

import importlib.util
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..model.errors import ConfigError
from ..model.requests import describe_validation_error
from ..paths import LocationError, config_path
from . import tables as hook_settings

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")

# Gateway keys and the environment variable that overrides each.
GATEWAY_ENV = {
    "provider": "SYSTEM1_PROVIDER",
    "fallback": "SYSTEM1_FALLBACK",
    "timeout_s": "SYSTEM1_TIMEOUT_S",
    "deadline_s": "SYSTEM1_DEADLINE_S",
    "min_confidence": "SYSTEM1_MIN_CONFIDENCE",
    "log_level": "SYSTEM1_LOG_LEVEL",
    "log_file": "SYSTEM1_LOG_FILE",
}
# Variables that look like SYSTEM1_<NAME>_<KEY> but are not provider settings.
# Serve keys ([serve]) and their environment variables.
SERVE_ENV = {
    "host": "SYSTEM1_SERVE_HOST",
    "port": "SYSTEM1_SERVE_PORT",
    "autostart": "SYSTEM1_SERVE_AUTOSTART",
    "idle_exit_min": "SYSTEM1_SERVE_IDLE_EXIT_MIN",
    "load_budget_s": "SYSTEM1_SERVE_LOAD_BUDGET_S",
}
# Shared state ([state]): where cooldowns, notices and counters live (store/).
STATE_ENV = {"url": "SYSTEM1_STATE_URL", "prefix": "SYSTEM1_STATE_PREFIX"}
# Read by store/redis_store.py itself: secrets and TLS files never come from the config file.
STATE_SECRET_ENV = {"SYSTEM1_STATE_PASSWORD", "SYSTEM1_STATE_USERNAME", "SYSTEM1_STATE_CA_FILE",
                    "SYSTEM1_STATE_CERT_FILE", "SYSTEM1_STATE_KEY_FILE"}
_RESERVED_ENV = (set(GATEWAY_ENV.values()) | set(SERVE_ENV.values()) | set(STATE_ENV.values()) | STATE_SECRET_ENV
                 | {"SYSTEM1_CONFIG", "SYSTEM1_STATE_DIR"})


CREDENTIAL_KEYS = {"api_key", "key", "token", "bearer", "password", "secret"}


class GatewaySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    provider: str = Field(default="embedded", min_length=1)
    fallback: list[str] = Field(default_factory=list)
    timeout_s: float = Field(default=5.0, gt=0, le=600)
    deadline_s: float = Field(default=8.0, gt=0, le=3600)
    min_confidence: float = Field(default=0.6, ge=0, le=1)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "WARNING"
    log_file: str | None = None

    @field_validator("fallback", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):  # SYSTEM1_FALLBACK is a comma list
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value


class ServeSettings(BaseModel):
    """`system1 serve` and the per-user daemon (`system1 daemon`)."""

    model_config = ConfigDict(extra="forbid")
    host: str = Field(default="127.0.0.1", min_length=1)
    port: int = Field(default=8737, ge=0, le=65535)  # 0: any free port (the port file says which)
    # The NAME of the environment variable holding the bearer key (never the key itself);
    # required to bind anything but loopback.
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    autostart: bool = True  # the CLI and the stdio MCP server start the daemon when it is not running
    idle_exit_min: float = Field(default=60, ge=0, le=100_000)  # 0: never exit when idle
    load_budget_s: float = Field(default=60, gt=0, le=3600)  # model load, before any deadline starts
    # Bounds on what a connection may cost before it sent a whole request (http/connections.py).
    max_connections: int = Field(default=512, ge=4, le=65536)  # also kept under half the descriptor limit
    request_read_timeout_s: float = Field(default=10, gt=0, le=600)  # a request's head and body


class StateSettings(BaseModel):
    """Where the deployment's shared state lives: this user's SQLite file (no url), or Redis."""

    model_config = ConfigDict(extra="forbid")
    url: str | None = Field(default=None, description="redis://host:port/db, rediss:// (TLS) or unix://path")
    prefix: str = Field(default="system1", pattern=r"^[A-Za-z0-9_.-]{1,64}$",
                        description="key prefix: one per deployment sharing a Redis")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("redis", "rediss", "unix"):
            raise ValueError(f"{value!r} is not a redis://, rediss:// or unix:// URL")
        if parts.scheme != "unix" and not parts.hostname:
            raise ValueError(f"{value!r} names no host")
        if importlib.util.find_spec("redis") is None:
            raise ValueError("a Redis URL needs the redis client: pip install 'system1-gateway[redis]'")
        return value


@dataclass(frozen=True)
class Config:
    gateway: GatewaySettings = field(default_factory=GatewaySettings)
    serve: ServeSettings = field(default_factory=ServeSettings)
    state: StateSettings = field(default_factory=StateSettings)
    providers: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: Path | None = None
    # [routing], [skills], [guard]: read by the Claude Code hooks (config/tables.py)
    hooks: dict[str, dict[str, Any]] = field(default_factory=lambda: hook_settings.parse({}))

    @property
    def chain(self) -> list[str]:
        return [self.gateway.provider, *self.gateway.fallback]

    def kind_of(self, name: str) -> str:
        return str(self.providers.get(name, {}).get("kind", name))

    def provider_settings(self, name: str) -> dict[str, Any]:
        """File settings of one rung, overridden by SYSTEM1_<NAME>_<KEY> variables."""
        settings = {k: v for k, v in self.providers.get(name, {}).items() if k != "kind"}
        prefix = "SYSTEM1_" + re.sub(r"[^A-Z0-9]", "_", name.upper()) + "_"
        for var, value in os.environ.items():
            key = var[len(prefix):].lower()
            # SYSTEM1_<NAME>_API_KEY and friends are credentials the provider reads itself,
            # not settings (a secret never becomes a setting).
            if var.startswith(prefix) and var not in _RESERVED_ENV and key not in CREDENTIAL_KEYS:
                settings[key] = value
        return settings


def _line_of(text: str, table: str, key: str) -> int | None:
    """Line number of `key` inside `[table]`, for messages (tomllib keeps no positions)."""
    current = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        header = re.match(r"^\[\s*([^\]]+?)\s*\]", stripped)
        if header:
            current = header.group(1).replace('"', "")
            continue
        if current == table and re.match(rf"^{re.escape(key)}\s*=", stripped):
            return number
    return None


def load_config(path: Path | None = None) -> Config:
    """Read the file (if any) and apply environment overrides; raises ConfigError."""
    try:
        path = path or config_path()
    except LocationError as exc:
        raise ConfigError(str(exc)) from None
    text = ""
    exists = path.exists()
    if exists:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read: {exc}") from None
    elif "SYSTEM1_CONFIG" in os.environ:
        raise ConfigError(f"{path}: SYSTEM1_CONFIG points to a file that does not exist")
    return parse_config_text(text, path, os.environ, source=path if exists else None)


def parse_config_text(text: str, path: Path, environ: Mapping[str, str] | None = None,
                      source: Path | None = None) -> Config:
    """A Config from the text of a config file; `environ` applies the SYSTEM1_* overrides
    (None: the file alone, e.g. to check a file before writing it). Raises ConfigError."""
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None

    unknown = sorted(set(data) - {"gateway", "serve", "state", "providers", *hook_settings.TABLES})
    if unknown:
        raise ConfigError(f"{path}: unknown table or key {unknown[0]!r} (expected [gateway], [serve], [state], "
                          "[providers.<name>], [routing], [skills] and [guard])")
    try:
        hooks = hook_settings.parse(data)
    except hook_settings.Problem as exc:
        raise ConfigError(f"{path}: {exc}") from None
    gateway_raw = data.get("gateway", {})
    providers_raw = data.get("providers", {})
    if not isinstance(providers_raw, dict) or not all(isinstance(v, dict) for v in providers_raw.values()):
        raise ConfigError(f"{path}: 'providers' must contain one table per provider, [providers.<name>]")

    gateway = _table(GatewaySettings, "gateway", gateway_raw, GATEWAY_ENV, text, path, environ)
    serve = _table(ServeSettings, "serve", data.get("serve", {}), SERVE_ENV, text, path, environ)
    state_raw = data.get("state", {})
    if isinstance(state_raw, dict) and isinstance(state_raw.get("url"), str) and urlsplit(state_raw["url"]).password:
        line = _line_of(text, "state", "url")
        raise ConfigError(f"{path}" + (f", line {line}" if line else "") + ", [state] url: a password is never read "
                          "from the config file; set SYSTEM1_STATE_PASSWORD (or put the whole URL in SYSTEM1_STATE_URL)")
    state = _table(StateSettings, "state", state_raw, STATE_ENV, text, path, environ)
    config = Config(gateway=gateway, serve=serve, state=state, providers=providers_raw, source=source, hooks=hooks)
    _check_chain(config, path)
    return config


def _table(model: type[BaseModel], table: str, raw: Any, env: dict[str, str], text: str, path: Path,
           environ: Mapping[str, str] | None) -> Any:
    """One settings table, overridden by its environment variables; a ConfigError names the
    variable, or the file, line and table."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {table!r} must be a table")
    merged = dict(raw)
    from_env: set[str] = set()
    for key, var in env.items() if environ is not None else ():
        if environ is not None and environ.get(var, "") != "":
            merged[key] = environ[var]
            from_env.add(key)
    try:
        return model.model_validate(merged)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = str(first["loc"][0]) if first["loc"] else ""
        if key in from_env:
            where = f"environment variable {env[key]}"
        else:
            line = _line_of(text, table, key)
            where = f"{path}" + (f", line {line}" if line else "") + f", [{table}]"
        raise ConfigError(f"{where}: {describe_validation_error(exc)}") from None


def _check_chain(config: Config, path: Path) -> None:
    from ..providers import KINDS

    chain = config.chain
    seen = set()
    for name in chain:
        if name in seen:
            raise ConfigError(f"provider chain lists {name!r} twice (provider + fallback must be duplicate-free)")
        seen.add(name)
        kind = config.kind_of(name)
        if kind not in KINDS:
            raise ConfigError(
                f"{path}: provider {name!r} has unknown kind {kind!r} (known: {', '.join(sorted(KINDS))}; "
                f"define [providers.{name}] with kind = \"...\" for a named instance)"
            )
