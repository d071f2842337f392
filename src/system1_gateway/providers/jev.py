"""`jev`: TypeSafe's hosted Jev API, on the systemone wire.

Differences from the generic kind: the endpoint defaults to the hosted API (remote by
nature, so `allow_remote` defaults to true), the bearer key comes only from
`SYSTEM1_JEV_API_KEY`, and the model defaults to a pinned version: `jev-latest` moves under
you, so using it logs a warning. `retry-after-ms` / `retry-after` feed the cooldowns.
`zstd = true` compresses request bodies of 1 KiB and more, as the official SDK does.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from ..logs import LOGGER
from ..model.errors import ConfigError
from .base import parse_settings
from .systemone import SystemOneProvider, SystemOneSettings

KEY_ENV = "SYSTEM1_JEV_API_KEY"
PINNED = "jev-1.13.0"
log = logging.getLogger(LOGGER)


ZSTD_MIN_BYTES = 1024  # the official SDK compresses bodies from this size on


class JevSettings(SystemOneSettings):
    endpoint: str = "https://api.typesafe.ai"
    model: str = PINNED
    allow_remote: bool = True
    zstd: bool = False  # compress request bodies (needs `pip install zstandard`)


class JevProvider(SystemOneProvider):
    kind: ClassVar[str] = "jev"
    key_env: ClassVar[str | None] = KEY_ENV
    settings: JevSettings  # what _parse gives

    def __init__(self, name: str, settings: dict[str, Any]):
        super().__init__(name, settings)
        self._compress = None
        if self.settings.zstd:
            try:
                import zstandard
            except ImportError:
                raise ConfigError(f"[providers.{name}] zstd: needs the zstandard package (pip install zstandard)") from None
            self._compress = zstandard.ZstdCompressor().compress
        if self.settings.model in ("jev-latest", "jev-preview"):
            log.warning("[providers.%s] model %r is a moving alias; pin a version such as %r",
                        name, self.settings.model, PINNED)

    def _parse(self, name: str, settings: dict[str, Any]) -> Any:
        return parse_settings(JevSettings, name, settings)

    def _encode(self, body: bytes) -> tuple[bytes, dict[str, str]]:
        if self._compress is not None and len(body) >= ZSTD_MIN_BYTES:
            return self._compress(body), {"content-encoding": "zstd"}
        return body, {}
