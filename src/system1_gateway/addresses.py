"""Whether a host stays on this machine (one definition: the HTTP face's bind check and the
HTTP providers' "no decisions off this machine unless allowed" both ask it)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback IP literals (bracketed IPv6 included); any other
    name may resolve anywhere, so it is not loopback."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
