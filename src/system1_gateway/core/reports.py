"""Reports about the gateway rather than answers: health, capabilities, status.

Each is a plain dict (the shapes are in results.py) built from the config, the rungs and the
shared state; none sends a decision, and none lets a provider's failure escape: a probe that
raises is a probe that failed.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from .. import __codename__, __version__, providers, toggle
from ..config.settings import Config
from ..logs import LOGGER
from ..model import builtins
from ..model.errors import ConfigError, GatewayError
from ..model.requests import SCHEMA_VERSION
from ..store.base import StateStore, iso
from .chain import Rungs, ms
from .chain import cooling as cooling_rungs

log = logging.getLogger(LOGGER)


def health(config: Config, config_error: ConfigError | None, rungs: Rungs,
           timeout_s: float | None = None) -> dict[str, Any]:
    if config_error:
        return {"status": "down", "reason": config_error.message, "providers": []}
    timeout_s = timeout_s or config.gateway.timeout_s
    probes = [_probe(rungs, name, timeout_s) for name in config.chain]
    oks = [p["ok"] for p in probes]
    status = "ok" if oks and oks[0] else "degraded" if any(oks) else "down"
    return {"status": status, "reason": None if status == "ok" else _first_problem(probes), "providers": probes}


def _probe(rungs: Rungs, name: str, timeout_s: float) -> dict[str, Any]:
    t0 = time.perf_counter()
    blocked = rungs.not_ready(name)
    try:
        if blocked:  # no key here or no consent: every request skips it, whatever it would say
            ok, detail, model = False, blocked, None
        else:
            h = rungs.get(name).health(timeout_s)
            ok, detail, model = h.ok, h.detail, h.model
    except GatewayError as exc:
        ok, detail, model = False, exc.message, None
    except Exception as exc:  # a provider's probe must never crash health
        log.warning("health probe of %s raised %s", name, type(exc).__name__, exc_info=True)
        ok, detail, model = False, f"health probe failed ({type(exc).__name__})", None
    return {"provider": name, "ok": ok, "detail": detail, "model": model, "latency_ms": ms(time.perf_counter() - t0)}


def _first_problem(probes: list[dict[str, Any]]) -> str | None:
    for p in probes:
        if not p["ok"]:
            return f"{p['provider']}: {p['detail']}"
    return None


def capabilities(config: Config, config_error: ConfigError | None) -> dict[str, Any]:
    from ..model.results import json_schemas

    gw = config.gateway
    return {
        "name": "system1-gateway",
        "version": __version__,
        "codename": __codename__,
        "schema_versions": {"judge": SCHEMA_VERSION, "decide": SCHEMA_VERSION},
        "provider_chain": None if config_error else config.chain,
        "config_error": config_error.message if config_error else None,
        "thresholds": {"min_confidence": gw.min_confidence},
        "timeouts": {"timeout_s": gw.timeout_s, "deadline_s": gw.deadline_s},
        "providers": sorted(providers.KINDS),
        "builtins": builtins.listing(),
        "schemas": json_schemas(),
    }


def credentials(rungs: Rungs, name: str) -> dict[str, Any]:
    """Whether a rung's credentials are present locally (never their values); a rung that
    cannot be built (bad settings, a missing optional package) says why in `error`."""
    try:
        provider = rungs.get(name)
    except GatewayError as exc:
        return {"needed": None, "present": None, "env": None, "error": exc.message}
    needed, present, env = provider.credentials()
    info: dict[str, Any] = {"needed": needed, "present": present, "env": env, "error": None}
    if provider.credentials_note:
        info["note"] = provider.credentials_note
    return info


def starting_rung(config: Config, rungs: Rungs, state: StateStore,
                  chain: list[str] | None = None) -> str | None:
    """The first rung of the chain (the configured one unless given) that may run
    (credentials present, consent given) and is not cooling — without probing anything."""
    order = chain or config.chain
    cooling = cooling_rungs(state, rungs, order)
    for name in order:
        if name not in cooling and credentials(rungs, name)["error"] is None and rungs.not_ready(name) is None:
            return name
    return None


def status(config: Config, config_error: ConfigError | None, rungs: Rungs,
           state: StateStore, chain: list[str] | None = None) -> dict[str, Any]:
    """Order, credentials, cooldowns, route, counts and toggle state (metadata only); for a
    caller's own chain (a checked per-request override) when given, e.g. the Pi extension's."""
    order = chain or config.chain
    if config_error:
        rung_info: dict[str, Any] = {}
    else:
        rung_info = {name: {"kind": config.kind_of(name), "credentials": credentials(rungs, name),
                            "blocked": rungs.not_ready(name)}
                     for name in order}
    return {
        "order": None if config_error else order,
        "config_error": config_error.message if config_error else None,
        "paused": toggle.paused(),
        "min_confidence": config.gateway.min_confidence,
        "rungs": rung_info,
        "cooldowns": [{"rung": name, "reason": c.reason, "until": iso(c.until), "remaining_s": round(c.remaining_s, 1),
                       "target": c.key, "set_by": c.rung}
                      for name, c in ({} if config_error else cooling_rungs(state, rungs, order)).items()],
        "preferred_start": None if config_error else order[0],
        "actual_start": None if config_error else starting_rung(config, rungs, state, order),
        "state": state.describe(),
        "routing": routing_mode(config),
        "guard": {"enabled": config.hooks["guard"]["enabled"], "approve": config.hooks["guard"]["approve"]},
        **state.today(),
    }


def routing_mode(config: Config) -> dict[str, Any]:
    """The hooks' routing mode as it acts now: "set" shows its READY (or forced) verdict; and
    what the Agent hook did with the last spawn it saw (time, outcome, reason; never the brief)."""
    from ..routing import gate, spawns

    routing = config.hooks["routing"]
    record = gate.read() if routing["mode"] == "set" else None
    return {"enabled": routing["enabled"], "mode": routing["mode"],
            "shown": gate.describe(routing["mode"], record) if routing["enabled"] else "off",
            "verdict": record["verdict"] if record else None, "at": record["at"] if record else None,
            "last_spawn": spawns.last()}
