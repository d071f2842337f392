"""/mcp: the MCP tools' view of the gateway (counted under face `mcp`) and the SDK
transport's own Host/Origin check."""

from __future__ import annotations

from typing import Any

from mcp.server.transport_security import TransportSecuritySettings

from ..core.gateway import Gateway
from .prometheus import face_var


class McpFace:
    """The gateway as the MCP tools see it: every call is counted under face `mcp` (the tools
    run in worker threads, where the HTTP front's face does not reach)."""

    def __init__(self, gateway: Gateway):
        self._gateway = gateway

    def judge(self, payload: Any, *, provider: str | None = None, deadline_s: float | None = None) -> dict[str, Any]:
        face_var.set("mcp")
        return self._gateway.judge(payload, provider=provider, deadline_s=deadline_s)

    def decide(self, payload: Any, *, provider: str | None = None, deadline_s: float | None = None) -> dict[str, Any]:
        face_var.set("mcp")
        return self._gateway.decide(payload, provider=provider, deadline_s=deadline_s)

    def __getattr__(self, name: str) -> Any:  # health, status, capabilities, warm, …
        return getattr(self._gateway, name)


def transport_security(allowed_hosts: set[str] | None) -> TransportSecuritySettings:
    # The Guard already refused foreign Hosts and Origins with a JSON body; the SDK's own check
    # stays on as a second line on loopback binds (the MCP spec asks for it).
    if allowed_hosts is None:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=sorted(allowed_hosts),
                                     allowed_origins=sorted(f"http://{h}" for h in allowed_hosts))

