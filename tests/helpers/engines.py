"""The embedded engine's fast tier, loaded once per test module that asks for it."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def fast_provider():
    """A warm EmbeddedProvider on the fast tier (MiniLM and the heads), closed after the module."""
    from system1_gateway.providers.embedded import EmbeddedProvider  # only for the modules that use it

    provider = EmbeddedProvider("embedded", {"tier": "fast"})
    provider.warm()
    yield provider
    provider.close()
