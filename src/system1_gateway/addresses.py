"""Addresses, one definition each: whether a host stays on this machine (the HTTP face's bind
check and the HTTP providers' "no decisions off this machine unless allowed" both ask it) and
the URL of a host and port (the server's banner, the daemon's port file). Stdlib, light: the
daemon's short-lived path imports it."""

from __future__ import annotations


def http_url(host: str, port: int) -> str:
    """`http://host:port`, an IPv6 literal bracketed."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback IP literals (bracketed IPv6 included); any other
    name may resolve anywhere, so it is not loopback."""
    if host.lower() == "localhost":
        return True
    import ipaddress  # here, not at import: the short-lived path needs only http_url

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
