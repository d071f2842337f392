"""`von`: Von's `von serve`, on the systemone wire.

Von's differences: `noul` is banded by default (never inside 0.2–0.8), the probability is in
`noul_raw` (read first by the systemone parser); the request `model` is ignored and the
answer always says `von-1.3.0` (both are recorded); `usage.output_tokens` counts answers, not
tokens (reported as unknown); and every engine exception — missing weights included — comes
back as 422 with a string `detail`, which is an operational failure of the engine (advances,
cools 30 s), unlike FastAPI's list-shaped 422 for a rejected request.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx

from ..model.errors import ProviderFailure
from ..model.requests import JudgeRequest
from .base import Reply, parse_settings
from .failures import error_message
from .systemone import SystemOneProvider, SystemOneSettings


class VonSettings(SystemOneSettings):
    endpoint: str = "http://127.0.0.1:8000"
    model: str = "von-latest"


class VonProvider(SystemOneProvider):
    kind: ClassVar[str] = "von"

    def _parse(self, name: str, settings: dict[str, Any]) -> Any:
        return parse_settings(VonSettings, name, settings)

    def _failure(self, resp: httpx.Response, body: Any) -> ProviderFailure:
        detail = body.get("detail") if isinstance(body, dict) else None
        if resp.status_code == 422 and isinstance(detail, str):
            return ProviderFailure(f"{self.name}: engine failure (HTTP 422): {error_message(body) or ''}", kind="server")
        return super()._failure(resp, body)

    def _reply(self, request: JudgeRequest, body: dict[str, Any]) -> Reply:
        reply = super()._reply(request, body)
        reply.model = f"{reply.model} (requested {self.settings.model})"
        reply.usage["output_tokens"] = None  # Von counts answers here, not tokens
        return reply
