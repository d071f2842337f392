"""An `embedded` rung answered by the per-user daemon's warm engine (one model per user).

When a process runs the gateway in-process — its settings differ from the daemon's, say an
environment override of the threshold — its `embedded` rung would load a second ≈ 2 GB copy
of the models. If the daemon's settings *for that rung* are provably the same, this provider
forwards the rung's judge to the daemon instead (`POST /v1/judge?provider=<rung>`), and the
local chain checks, thresholds and records the answers as its own.

"Provably the same" (Linux): the daemon's environment, read from /proc/<pid>/environ, gives
the port file's fingerprint (so the config file it read is ours, byte for byte), and its
`SYSTEM1_<RUNG>_*` variables equal ours. Anything unreadable or different: no delegation
(other systems: never, for now). Only the faces that answer in-process build one
(daemon/dispatch.py, delegating_build); the daemon and the bulk workers never do.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, ClassVar

from ..daemon import client
from ..daemon import files as daemon_files
from ..model.errors import ConfigError, MalformedAnswer, ProviderFailure, ProviderTimeout
from ..model.requests import JudgeRequest
from .base import BaseProvider, Credentials, Health, Reply


def daemon_environ(pid: int) -> dict[str, str] | None:
    """The environment the daemon was started with, or None where it cannot be read."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        raw = open(f"/proc/{pid}/environ", "rb").read()  # noqa: SIM115 - one read
    except OSError:
        return None
    env = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
    return env


def rung_variables(name: str, environ: Any) -> dict[str, str]:
    """The SYSTEM1_<NAME>_* variables that configure this rung (Config.provider_settings)."""
    prefix = "SYSTEM1_" + re.sub(r"[^A-Z0-9]", "_", name.upper()) + "_"
    return {k: v for k, v in environ.items() if k.startswith(prefix)}


def same_rung_settings(daemon: client.Daemon, name: str) -> bool:
    env = daemon_environ(daemon.pid)
    if env is not None:
        env.pop(daemon_files.LOCK_FD_ENV, None)  # the lock handed to the child: `daemon run` drops it too
    if env is None or daemon_files.fingerprint(env) != daemon.fingerprint:
        return False  # not its environment after all, or another config file
    return rung_variables(name, env) == rung_variables(name, os.environ)


def _raw(answer: dict[str, Any]) -> dict[str, Any]:
    """A final answer turned back into what an engine returns, for this chain's own check
    and threshold (the daemon applied its own threshold; only an engine abstention stays)."""
    kind = answer.get("type")
    if kind == "refusal":
        return {"type": "refusal", "rationale": answer.get("rationale")}
    raw: dict[str, Any] = {"type": kind}
    if kind == "noul":
        raw["p_true"] = answer.get("p_true")
    else:
        raw["probabilities"] = answer.get("probabilities")
        if kind == "choice":
            raw["choice"] = answer.get("choice")
    for key in ("engine_confidence", "rationale"):
        if answer.get(key) is not None:
            raw[key] = answer[key]
    if answer.get("abstain_reason") == "engine":
        raw["abstained"] = True
    return raw


class DaemonRung(BaseProvider):
    kind: ClassVar[str] = "embedded"
    self_timed: ClassVar[bool] = True  # one HTTP call bounded by the attempt's timeout: inline

    def __init__(self, name: str, daemon: client.Daemon, local: BaseProvider):
        self.name = name
        self.daemon: client.Daemon | None = daemon
        self.local = local  # built (cheap, lazy); loads only if the daemon goes away
        self.limits = local.limits

    def judge(self, request: JudgeRequest, timeout_s: float) -> Reply:
        daemon = self.daemon
        if daemon is None:
            return self.local.judge(request, timeout_s)
        payload = request.model_dump(mode="json", exclude_none=True)
        payload.update(deadline_s=max(timeout_s - 0.05, 0.001), min_confidence=0.0)
        try:
            result = daemon.post("/v1/judge", payload, timeout_s, {"provider": self.name})
        except client.DaemonUnavailable as exc:
            self.daemon = None  # from now on this process answers with its own engine
            raise ProviderFailure(f"{self.name}: the daemon's warm engine did not answer ({exc})") from None
        error = result.get("error")
        if error:
            message = f"{self.name} (daemon): {error.get('message', 'failed')}"
            code = error.get("code")
            if code == "provider_timeout" or code == "deadline_exceeded":
                raise ProviderTimeout(message)
            if code == "malformed_response":
                raise MalformedAnswer(message)
            if code == "config_error":
                raise ConfigError(message)
            raise ProviderFailure(message)
        answers = result.get("answers")
        if not isinstance(answers, dict):
            raise MalformedAnswer(f"{self.name} (daemon): no answers object")
        usage = result.get("usage") if isinstance(result.get("usage"), dict) else None
        return Reply(answers={qid: _raw(a) if isinstance(a, dict) else a for qid, a in answers.items()},
                     model=result.get("model") or self.name,
                     **({"usage": usage} if usage else {}))

    def health(self, timeout_s: float) -> Health:
        found = self.local.health(timeout_s)
        where = f"warm engine in the daemon ({self.daemon.describe()})" if self.daemon else "in-process"
        return Health(found.ok, f"{found.detail}; {where}", found.model)

    def warm(self) -> None:
        """Before the request's clock starts: wait (up to the load budget) for a daemon that
        is still loading its models; load locally only when it has gone."""
        if self.daemon is not None:
            ready, _ = client.wait_ready(client.peek().load_budget_s, alive=self._alive)
            if ready is not None:
                return
            self.daemon = None
        self.local.warm()

    def _alive(self) -> bool:
        return self.daemon is not None and daemon_files.pid_alive(self.daemon.pid)

    def credentials(self) -> Credentials:
        return self.local.credentials()

    def secrets(self) -> tuple[str, ...]:
        return self.local.secrets()

    def close(self) -> None:
        self.local.close()
