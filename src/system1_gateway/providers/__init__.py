"""Provider registry: kind → "module:Class", imported only when a rung first needs it.

Adding an engine is one module under providers/ and one line here.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from ..model.errors import ConfigError

KINDS: dict[str, str] = {
    "embedded": "system1_gateway.providers.embedded:EmbeddedProvider",
    "jev": "system1_gateway.providers.jev:JevProvider",
    "laya": "system1_gateway.providers.laya:LayaProvider",
    "mock": "system1_gateway.providers.mock:MockProvider",
    "ollama": "system1_gateway.providers.ollama:OllamaProvider",
    "openai": "system1_gateway.providers.openai:OpenAIProvider",
    "systemone": "system1_gateway.providers.systemone:SystemOneProvider",
    "von": "system1_gateway.providers.von:VonProvider",
}


def provider_class(kind: str) -> Any:
    target = KINDS.get(kind)
    if target is None:
        raise ConfigError(f"unknown provider kind {kind!r} (known: {', '.join(sorted(KINDS))})")
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)


def build(name: str, kind: str, settings: dict[str, Any]) -> Any:
    """A provider instance; its missing optional dependencies are a ConfigError naming the
    extra to install (not an "internal error" on the first request)."""
    cls = provider_class(kind)
    for module, extra in cls.requires.items():
        if importlib.util.find_spec(module) is None:
            raise ConfigError(f"[providers.{name}] kind {kind!r} needs the {module!r} package: "
                              f"pip install 'system1-gateway[{extra}]'")
    return cls(name, settings)
