"""HTTP to a server on loopback, and `system1 serve --port 0` as a child process."""

from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# An API key for the servers tests start with `[serve] api_key_env`.
KEY = "k" * 8 + "-test-key-0123456789"
LISTENING = re.compile(r"listening on http://127\.0\.0\.1:(\d+)")


def call(port: int, method: str, path: str, body=None, headers=None, timeout=30):
    """(status, headers, parsed JSON or text) over a fresh connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = raw.decode()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, parsed


def wait_ready(port: int, timeout=30):
    """/healthz's body once it says ok."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        status, _, body = call(port, "GET", "/healthz")
        if status == 200 and body["status"] == "ok":
            return body
        time.sleep(0.05)
    raise AssertionError("never ready")


def serve_port(proc, what: str = "system1 serve exited before listening", lines: list[str] | None = None) -> int:
    """The port a `system1 serve --port 0` child announces on stderr (read up to that line;
    the lines read are appended to `lines` when given)."""
    seen = [] if lines is None else lines
    while True:
        line = proc.stderr.readline()
        assert line, what + ("\n" + "".join(seen) if seen else "")
        seen.append(line)
        match = LISTENING.search(line)
        if match:
            return int(match.group(1))


@contextmanager
def serving(env: dict[str, str], *args: str, cwd: Path | None = None, ready: bool = True,
            drain: bool = True, stop_timeout: float = 30):
    """`system1 serve --port 0 ARGS` in `env`: yields (process, port) once it listens (and
    /healthz says ok, unless `ready=False`); stopped by SIGTERM at exit (killed if it hangs).
    `drain` reads the rest of its stderr in a thread so the pipe never fills; without it the
    caller reads `proc.stderr` itself."""
    proc = subprocess.Popen([sys.executable, "-m", "system1_gateway.cli", "serve", "--port", "0", *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=cwd)
    try:
        port = serve_port(proc)
        if drain:
            threading.Thread(target=proc.stderr.read, daemon=True).start()
        if ready:
            wait_ready(port)
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=stop_timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def running(gateway: Any = None, **kwargs):
    """`system1 serve`'s server in this process: on 127.0.0.1:<free port> in a thread, serving
    `gateway` (a Gateway; the configured one when None); yields (serving, port)."""
    from system1_gateway.http.serving import Serving

    serving = Serving(host="127.0.0.1", port=0, gateway=gateway, **kwargs)
    bound: dict[str, int] = {}
    ready = threading.Event()

    def started(host, port):
        bound["port"] = port
        ready.set()

    outcome: dict[str, int] = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("code", serving.run(on_started=started)), daemon=True)
    thread.start()
    serving.thread = thread  # for tests that stop it themselves
    assert ready.wait(30), "server did not start"
    try:
        yield serving, bound["port"]
    finally:
        serving.stop()
        thread.join(30)
        assert not thread.is_alive(), "server did not stop"
        assert outcome.get("code") == 0
