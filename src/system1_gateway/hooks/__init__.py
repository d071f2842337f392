"""Claude Code hooks, one module each, run as `<venv python> -I -m system1_gateway.hooks.<name>`.

Stdlib only (plus `daemon/client.py`): a hook runs once per prompt or tool call, so it asks the warm
daemon over loopback and never imports pydantic, mcp, numpy or httpx (tests/test_imports.py).
The hook server (serve.py) also loads the shell grammar when the guard is on (guard.py `ruled`).
"""
