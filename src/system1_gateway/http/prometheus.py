"""Prometheus metrics of `system1 serve` (`GET /metrics`), on a registry of its own.

Everything is observed from the results the faces produce (the gateway's result dicts:
attempts carry provider, outcome and latency), never from inside the core, so the numbers
are exactly what callers were told. `Observed(gateway, metrics)` is the gateway the faces use: it records
every judge/decide it answers, whichever face called it (native routes, the Jev router, the
MCP tools); the face comes from `face_var`, which the HTTP front sets per route.

Label values are bounded: faces are fixed, rungs are the configured rung names (the HTTP
face refuses an unknown `?provider=`), outcomes and error codes are closed sets.
"""

from __future__ import annotations

import contextvars
import logging
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ..logs import LOGGER

log = logging.getLogger(LOGGER)

FACES = ("http", "jev", "mcp")
face_var: contextvars.ContextVar[str] = contextvars.ContextVar("system1_face", default="http")

CONTENT_TYPE = CONTENT_TYPE_LATEST
# Mock and HTTP rungs answer in milliseconds, the embedded engine in seconds.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
NO_RUNG = "none"  # the request label when no rung answered (invalid request, chain exhausted)
TIMED_OUTCOMES = {"ok", "timeout", "error", "malformed"}  # attempts that actually ran an engine


class Metrics:
    def __init__(self, gateway: Any | None = None):
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "system1_requests", "Requests answered, by face, the rung that answered and the outcome "
            "(answered, decided, abstained, or the error code)", ["face", "rung", "outcome"], registry=r)
        self.attempts = Counter(
            "system1_attempts", "Rung attempts, by face, rung and attempt outcome "
            "(ok, timeout, error, malformed, cooling, skipped)", ["face", "rung", "outcome"], registry=r)
        self.abstentions = Counter(
            "system1_abstentions", "Abstained answers, by face, rung and reason", ["face", "rung", "reason"],
            registry=r)
        self.attempt_latency = Histogram(
            "system1_attempt_latency_seconds", "Latency of the rung attempts that ran an engine, per rung",
            ["rung"], buckets=LATENCY_BUCKETS, registry=r)
        self.request_latency = Histogram(
            "system1_request_latency_seconds", "Whole-request latency inside the gateway, per face",
            ["face"], buckets=LATENCY_BUCKETS, registry=r)
        self.http_responses = Counter(
            "system1_http_responses", "HTTP responses, by route template and status code", ["route", "status"],
            registry=r)
        self.engine_load = Gauge(
            "system1_engine_load_seconds", "How long warming the first rung took at server start", registry=r)
        self.ready = Gauge("system1_ready", "1 once the first rung is warm (what /healthz says)", registry=r)
        if gateway is not None:
            r.register(_CooldownCollector(gateway))

    def observe(self, face: str, result: Any) -> None:
        """Record one judge or decide result (a malformed one is skipped, never raised)."""
        try:
            self._observe(face if face in FACES else "http", result)
        except Exception as exc:  # noqa: BLE001 - metrics must never fail a request
            log.warning("metrics: result not recorded (%s)", type(exc).__name__)

    def _observe(self, face: str, result: dict[str, Any]) -> None:
        rung = result.get("provider") or NO_RUNG
        error = result.get("error")
        if error:
            outcome = error["code"]
        elif "decision" in result:  # a decide response
            outcome = result["status"]
        else:
            outcome = "answered"
        self.requests.labels(face, rung, outcome).inc()
        self.request_latency.labels(face).observe(result["latency_ms"] / 1000)
        for attempt in result.get("attempts", []):
            self.attempts.labels(face, attempt["provider"], attempt["outcome"]).inc()
            if attempt["outcome"] in TIMED_OUTCOMES:
                self.attempt_latency.labels(attempt["provider"]).observe(attempt["latency_ms"] / 1000)
        if "decision" in result:
            if result["status"] == "abstained":
                self.abstentions.labels(face, rung, result.get("abstain_reason") or "unknown").inc()
            return
        for answer in result.get("answers", {}).values():
            if answer.get("abstained"):
                self.abstentions.labels(face, rung, answer.get("abstain_reason") or "unknown").inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class _CooldownCollector:
    """Cooldown state per rung, read from the shared state at scrape time (cooldowns are set
    by every process of the user or every replica of the deployment, not only this server),
    and whether that shared state is usable."""

    def __init__(self, gateway: Any):
        self.gateway = gateway

    def describe(self) -> list:
        return []  # collected lazily: nothing to read at registration

    def collect(self):
        cooling = GaugeMetricFamily("system1_rung_cooling", "1 while the rung is cooling (skipped)", labels=["rung"])
        remaining = GaugeMetricFamily("system1_rung_cooldown_remaining_seconds",
                                      "Seconds until a cooling rung may be tried again (0: not cooling)",
                                      labels=["rung"])
        try:
            rungs = [] if self.gateway.config_error else list(self.gateway.config.chain)
            left = {name: float(c.remaining_s) for name, c in self.gateway.cooling(rungs).items()}
        except Exception as exc:  # noqa: BLE001 - a scrape must answer even if the state file is gone
            log.warning("metrics: cooldowns unreadable (%s)", type(exc).__name__)
            rungs, left = [], {}
        for rung in dict.fromkeys([*rungs, *left]):
            cooling.add_metric([rung], 1.0 if left.get(rung, 0) > 0 else 0.0)
            remaining.add_metric([rung], max(0.0, left.get(rung, 0.0)))
        yield cooling
        yield remaining
        state = self.gateway.state.describe()
        fallback = GaugeMetricFamily("system1_state_fallback", "1 while the shared state (SQLite file or Redis) is "
                                     "unusable and this process keeps cooldowns and counters in memory",
                                     labels=["backend"])
        fallback.add_metric([state["backend"]], 0.0 if state["ok"] else 1.0)
        yield fallback


class Observed:
    """The gateway as the HTTP faces use it: every judge/decide result it answers is recorded
    in `metrics` (the face from `face_var`); everything else is the gateway's own. A wrapper,
    not a patch of the gateway: a decide (which calls the gateway's own judge inside) is
    recorded once, as a decide, and the gateway object itself is left as it was."""

    def __init__(self, gateway: Any, metrics: Metrics):
        self.gateway, self.metrics = gateway, metrics

    def judge(self, payload: Any, *, provider: str | None = None, deadline_s: float | None = None) -> dict[str, Any]:
        return self._record(self.gateway.judge(payload, provider=provider, deadline_s=deadline_s))

    def decide(self, payload: Any, *, provider: str | None = None, deadline_s: float | None = None) -> dict[str, Any]:
        return self._record(self.gateway.decide(payload, provider=provider, deadline_s=deadline_s))

    def _record(self, result: dict[str, Any]) -> dict[str, Any]:
        self.metrics.observe(face_var.get(), result)
        return result

    def __getattr__(self, name: str) -> Any:  # config, health, status, override, warm, …
        return getattr(self.gateway, name)
