"""Who answers a request: the per-user daemon's warm engine, or this process.

Every face that answers (the CLI, the stdio MCP server, `bench`, `calibrate`, `evaluate`) asks
here; the daemon and the bulk workers, which are the warm engine, never do. Two decisions:

* `ask()` sends a decide/judge to the daemon when one with this process's settings runs
  (starting one when `[serve] autostart` allows), under the caller's deadline, and returns its
  answer marked with a `daemon` attempt, or what the caller needs to answer in-process: an
  attempt saying why (put first in its own result) and the time left of the deadline;
  `in_process()` then answers with the local Gateway within that time.
* `gateway()` builds the local Gateway. When the daemon runs this rung's settings, an
  `embedded` rung is built as a DaemonRung (providers/daemon_rung.py) that forwards to the
  daemon's warm engine instead of loading a second ≈ 2 GB copy: one model per user.

Stdlib at import (the CLI's fast path imports it); the core, pydantic and the providers load only
on the in-process path.
"""

from __future__ import annotations

import time
from collections import namedtuple

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

from . import client

# What an autostart gave: the daemon (None if there is none to ask), whether its settings are this
# process's, and why there is none when the caller should be told (recent starts failed).
Started = namedtuple("Started", "daemon same_settings why_not")


def gateway(config: Any = None, **options: Any) -> Any:
    """The in-process Gateway for `config` (default: the config file and environment; a broken
    one gives a gateway that answers config_error), its embedded rungs delegated to the daemon
    where it runs their settings. `options` go to Gateway (record, calibration, providers)."""
    from ..config.settings import load_config
    from ..core.gateway import Gateway
    from ..model.errors import ConfigError

    if config is None:
        try:
            config = load_config()
        except ConfigError as exc:
            import logging

            from ..logs import LOGGER

            logging.getLogger(LOGGER).error("configuration error: %s", exc.message)
            return Gateway(None, exc, **options)
    return Gateway(config, build=delegating_build, **options)


def delegating_build(name: str, kind: str, settings: dict[str, Any]) -> Any:
    """providers.build, except that an `embedded` rung whose settings the running daemon
    provably shares becomes a DaemonRung around the (lazily loading) local provider."""
    from .. import providers

    local = providers.build(name, kind, settings)
    if kind != "embedded":
        return local
    from ..providers.daemon_rung import DaemonRung, same_rung_settings

    daemon, _ = client.locate(client.peek())  # None for a stale file, and inside the daemon
    if daemon is None or not same_rung_settings(daemon, name):
        return local
    return DaemonRung(name, daemon, local)


def note(outcome: str, daemon: client.Daemon | None, detail: str, latency_ms: float = 0.0) -> dict[str, Any]:
    """The attempt that says which path answered (results.py's Attempt shape)."""
    where = f" ({daemon.describe()})" if daemon else ""
    return {"provider": client.ROUTE, "outcome": outcome, "latency_ms": round(latency_ms, 2), "detail": f"daemon{where}: {detail}"}


class Routed:
    """What `ask` found: the daemon's answer, or why the caller answers in-process."""

    def __init__(self, result: dict[str, Any] | None = None, note: dict[str, Any] | None = None,
                 remaining_s: float | None = None):
        self.result = result
        self.note = note  # the first attempt of an in-process result (None: no daemon involved)
        self.remaining_s = remaining_s  # deadline left for the in-process answer (None: all of it)


def _deadline(payload: Any, settings: client.ConfigPeek) -> float:
    own = payload.get("deadline_s") if isinstance(payload, dict) else None
    if isinstance(own, (int, float)) and not isinstance(own, bool) and 0 < own <= 600:
        return float(own)
    return settings.deadline_s


def _loading_allowance(daemon: client.Daemon, settings: client.ConfigPeek) -> float:
    """Extra wait for a daemon still loading its models (it waits for them before the
    request's deadline starts, up to the load budget). Only a daemon younger than the load
    budget can be loading; only then is /healthz asked (one loopback round trip)."""
    if time.time() - daemon.started >= settings.load_budget_s:
        return 0.0
    return settings.load_budget_s if daemon.get("/healthz", client.CONNECT_TIMEOUT_S).get("status") == "loading" else 0.0


def ask(path: str, payload: Any, *, provider: str | None = None, started: float | None = None,
        autostart: bool | None = None) -> Routed:
    """Send one decide/judge to the daemon, within the request's deadline."""
    started = time.monotonic() if started is None else started
    settings = client.peek()
    deadline_s = _deadline(payload, settings)
    daemon, same = client.locate(settings)
    why = None
    if daemon is None and (settings.autostart if autostart is None else autostart):
        daemon, same, why = start_daemon(settings)
        # Waiting for the new daemon's models is load time (the load budget), never the
        # request's deadline, as in the core.
        started = time.monotonic()
    if daemon is None:
        return Routed(note=note("skipped", None, f"{why}; answered in-process") if why else None)
    if not same:
        return Routed(note=note("skipped", daemon, "runs other settings (an environment override or another "
                                                   "config file); answered in-process"))
    t0 = time.monotonic()
    try:
        loading_s = _loading_allowance(daemon, settings)
        timeout_s = deadline_s + client.MARGIN_S + loading_s - (time.monotonic() - started)
        # A chain override ("jev,openai") travels as ?provider=, not ?chain=: a daemon from before
        # chains (same settings, older code) then refuses it with a 422 instead of ignoring an
        # unknown parameter and answering with its own chain.
        result = daemon.post(path, payload, timeout_s, {"provider": provider} if provider else None)
    except client.DaemonUnavailable as exc:
        left = deadline_s - (time.monotonic() - started)
        return Routed(note=note("error", daemon, f"{exc}; answered in-process", (time.monotonic() - t0) * 1000),
                      remaining_s=left)
    if not client.is_result(result):
        left = deadline_s - (time.monotonic() - started)
        return Routed(note=note("error", daemon, "answered something that is not a gateway result; "
                                                 "answered in-process"), remaining_s=left)
    result["attempts"].insert(0, note("ok", daemon, "answered by the warm daemon", (time.monotonic() - t0) * 1000))
    return Routed(result=result)


def in_process(gateway: Any, kind: str, payload: Any, provider: str | None, routed: Routed) -> dict[str, Any]:
    """Answer with an in-process Gateway after `ask` found no usable daemon: within what is
    left of the deadline when the daemon failed mid-call, with `routed.note` as the first
    attempt."""
    if routed.remaining_s is None:
        result = (gateway.decide if kind == "decide" else gateway.judge)(payload, provider=provider)
    else:
        result = _within(gateway, kind, payload, provider, routed.remaining_s)
    if routed.note is not None and isinstance(result.get("attempts"), list):
        result["attempts"].insert(0, routed.note)
    return result


def _within(gateway: Any, kind: str, payload: Any, provider: str | None, remaining_s: float) -> dict[str, Any]:
    """Run with the deadline cut to what is left (a request's own deadline_s included); with
    nothing left the answer is deadline_exceeded, a clean error."""
    if remaining_s < client.MIN_DEADLINE_S:  # below what a request may ask for: nothing left to run
        from ..core.gateway import error_result  # the in-process path: the core is loaded already
        from ..model.errors import DEADLINE_EXCEEDED, GatewayError

        rid = payload.get("request_id") if isinstance(payload, dict) else None
        return error_result(kind, GatewayError("the deadline ran out while the daemon failed to answer",
                                               DEADLINE_EXCEEDED), rid if isinstance(rid, str) else None)
    run = gateway.decide if kind == "decide" else gateway.judge
    return run(payload, provider=provider, deadline_s=remaining_s)


def start_daemon(settings: client.ConfigPeek) -> Started:
    """Start the daemon detached: (daemon, same settings, why there is none). With a model to
    load (an `embedded` first rung) wait for it: loading a second copy in-process takes as
    long, on the same cores, and doubles the memory (measured in docs/warm-engine.md); with
    HTTP or mock rungs answer in-process now and leave the daemon to come up for the next
    call. `why` says so when recent starts failed, or this one did."""
    try:
        from . import lifecycle  # stdlib + daemon_files only (its contract)

        started = lifecycle.ensure_running()
        if started is None:  # autostart off, other settings, or it failed
            return Started(None, False, None)
        if started.get("status") == "backoff":
            return Started(None, False, str(started.get("detail")))
        if settings.first_kind != "embedded":
            return Started(None, False, None)
        begun = time.time()
        daemon, same = client.wait_ready(settings.load_budget_s, settings, alive=lifecycle.lock_held)
        failed = lifecycle.last_failure() if daemon is None else None
        if failed is not None and failed["time"] >= begun - 1:  # the one just spawned never served
            return Started(None, False, f"did not start ({failed['reason']})")
        return Started(daemon, same, None)
    except Exception:  # noqa: BLE001 - autostart is a convenience: never what fails a request
        return Started(None, False, None)


