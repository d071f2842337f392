"""The per-user daemon and the faces' way to it. Importing this package runs nothing.

* `lifecycle` — `system1 daemon start|stop|status|run|…`: who may serve, the lock, the spawn;
* `files` — the daemon's files and the fingerprint that tells a client whether it serves *its* settings;
* `client` — the stdlib-only HTTP client a hook or the CLI's fast path uses;
* `dispatch` — who answers a face's request: the daemon's warm engine, or this process;
* `login_units` — start at login (systemd user service, LaunchAgent, Startup folder).

`lifecycle`, `files` and `client` are on the short-lived path (docs/architecture.md): the
standard library only at import.
"""
