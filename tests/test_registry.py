"""Every registered provider honours the contract: clear constructor errors, declared limits,
and a health probe that returns within its timeout against a closed port."""

import time

import pytest

from fault_engine import closed_port
from system1_gateway.model.errors import ConfigError
from system1_gateway.providers import KINDS, build
from system1_gateway.providers.base import Limits

NETWORK = {"systemone", "laya", "jev", "von", "ollama"}


def usable(kind, port):
    if kind in NETWORK:
        return {"endpoint": f"http://127.0.0.1:{port}", **({"model": "m"} if kind in ("systemone", "ollama") else {})}
    return {}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_unknown_setting_is_a_clear_error(kind):
    with pytest.raises(ConfigError, match=rf"\[providers.{kind}\] no_such_setting: unknown field"):
        build(kind, kind, {**usable(kind, 9), "no_such_setting": 1})


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_declares_limits_and_probes_health_within_its_timeout(kind):
    provider = build(kind, kind, usable(kind, closed_port()))
    assert isinstance(provider.limits, Limits) and provider.limits.max_options >= 2
    t0 = time.perf_counter()
    health = provider.health(0.5)
    assert time.perf_counter() - t0 < 0.5 + 0.2
    if kind in NETWORK:
        assert not health.ok and health.detail


@pytest.mark.parametrize("kind", sorted(NETWORK - {"jev"}))  # jev is the hosted API: remote by design
def test_network_providers_refuse_remote_hosts_by_default(kind):
    with pytest.raises(ConfigError, match="not a loopback address"):
        build(kind, kind, {"endpoint": "http://192.0.2.10:8000", "model": "m"} if kind in ("systemone", "ollama") else {"endpoint": "http://192.0.2.10:8000"})
