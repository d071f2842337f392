"""health / status / warm never let a provider's failure escape (reports.py, Gateway.warm)."""

import json

from local_http import LocalServer, QuietHandler
from system1_gateway.config.settings import Config, GatewaySettings
from system1_gateway.core.gateway import Gateway
from system1_gateway.providers.base import BaseProvider


class Exploding(BaseProvider):
    kind = "exploding"

    def __init__(self):
        self.name = "first"

    def health(self, timeout_s):
        raise ValueError("Expecting value: line 1 column 1")  # what an unguarded resp.json() raises

    def warm(self):
        raise RuntimeError("llama_model_load: corrupt file")


def test_a_probe_that_raises_is_a_failed_probe():
    gw = Gateway(Config(gateway=GatewaySettings(provider="first", fallback=["mock"])), providers={"first": Exploding()})
    health = gw.health()
    assert health["status"] == "degraded"
    assert health["providers"][0]["ok"] is False and "health probe failed (ValueError)" in health["providers"][0]["detail"]


def test_a_model_that_will_not_load_does_not_crash_warm():
    gw = Gateway(Config(gateway=GatewaySettings(provider="first")), providers={"first": Exploding()})
    gw.warm()  # logs, never raises: the request that follows reports it


class NotJson(QuietHandler):
    """/health answers 200 with a body that is not JSON (a proxy page); /healthz is absent,
    so the laya provider takes it for upstream laya[serve] and reads the body."""

    def do_GET(self):
        if self.path == "/healthz":
            self.send_json(404, {"detail": "Not Found"})
        else:
            self.send_json(200, b"<html>upstream laya behind a proxy</html>")


def test_laya_and_ollama_health_on_a_body_that_is_not_json():
    server = LocalServer(NotJson)
    try:
        for kind, extra in (("laya", {}), ("ollama", {"model": "qwen3"})):
            gw = Gateway(Config(gateway=GatewaySettings(provider=kind, fallback=["mock"]),
                                providers={kind: {"endpoint": server.url, **extra}}))
            health = gw.health()
            json.dumps(health)
            first = health["providers"][0]
            assert "Error" not in first["detail"], first  # handled by the provider, not the net
            assert health["providers"][1]["ok"] is True, health
    finally:
        server.close()
