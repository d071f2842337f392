"""The stdlib-only client of the per-user daemon (the CLI fast path, the stdio MCP server, hooks).

Only the standard library is imported here (socket, json; tomllib only when the config changed): a hook or a CLI call
that finds a warm daemon must not pay for pydantic (≈ 140 ms), mcp, numpy or httpx. Even
http.client is left out: with the email parser and ssl it imports it cost ≈ 30 ms of a
≈ 60 ms budget (benchmarks/daemon_cli.py), and one loopback HTTP/1.1 exchange with
`Connection: close` is all the client needs (`_exchange`).

    daemon = find()                        # None: no daemon of *these* settings is running
    result = daemon.post("/v1/decide", payload, timeout_s=8.5)

The faces do not call this directly: `dispatch.py` decides, once per request, whether the
daemon or this process answers. A daemon that is absent, stale, refuses, resets or hangs is a
`DaemonUnavailable`, never a crash. This module imports neither the core nor the lifecycle.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections import namedtuple  # loaded by json and socket already; `typing` is not

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

from .. import bounded_json
from . import files as daemon_files

CONNECT_TIMEOUT_S = 0.5  # loopback: a live daemon accepts in microseconds; a dead one refuses at once
MARGIN_S = 0.5  # past the deadline: the core answers within deadline + 50 ms, plus the HTTP round trip
READY_POLL_S = 0.05
MIN_DEADLINE_S = 0.01  # model/requests.py's smallest deadline_s
MAX_REPLY_BYTES = 16 * 1024 * 1024  # a result is kilobytes; past this the reply is not the daemon's
ROUTE = "daemon"  # the `provider` of the attempt that says which path answered

# Defaults of config/settings.py's GatewaySettings / ServeSettings, read here without pydantic;
# tests/test_client.py checks that peek() agrees with load_config().
DEFAULT_DEADLINE_S = 8.0
DEFAULT_LOAD_BUDGET_S = 60.0


# What the port file names: the daemon if it is alive (else None), and whether its settings are
# this process's (a daemon of other settings must not answer this process's requests).
Located = namedtuple("Located", "daemon same_settings")


class DaemonUnavailable(Exception):
    """The daemon did not give a usable answer; the caller answers in-process."""


class ConfigPeek:
    """The few settings the fast path needs, read from the config file (config/file.py).
    (Plain classes here, not dataclasses: `dataclasses` imports `inspect`, ≈ 8 ms.)"""

    def __init__(self, deadline_s: float = DEFAULT_DEADLINE_S, load_budget_s: float = DEFAULT_LOAD_BUDGET_S,
                 autostart: bool = True, api_key_env: str | None = None, first_kind: str = "embedded",
                 kinds: dict[str, str] | None = None, chain: list[str] | None = None):
        self.deadline_s, self.load_budget_s, self.autostart = deadline_s, load_budget_s, autostart
        self.api_key_env = api_key_env
        self.first_kind = first_kind  # kind of the first rung: is there a model to load?
        self.kinds = kinds  # rung name -> kind for [providers.<name>] tables
        self.chain = chain if chain is not None else ["embedded"]  # the configured rung names, in order


def _number(value: Any, default: float, low: float, high: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if low < number <= high else default


def peek() -> ConfigPeek:
    """The fast path's settings. A broken file gives the defaults: whoever answers (the
    daemon, or the in-process gateway) reports the config error itself."""
    from ..config import file as config_file
    from ..config import tables as config_tables

    try:
        data = config_file.load() or {}
        readable = True
    except config_file.Unreadable:
        data, readable = {}, False
    gateway = g if isinstance(g := data.get("gateway"), dict) else {}
    serve = s if isinstance(s := data.get("serve"), dict) else {}
    tables = t if isinstance(t := data.get("providers"), dict) else {}
    kinds = {name: str(t.get("kind", name)) for name, t in tables.items() if isinstance(t, dict)}
    env = os.environ
    deadline = env.get("SYSTEM1_DEADLINE_S") or gateway.get("deadline_s", DEFAULT_DEADLINE_S)
    budget = env.get("SYSTEM1_SERVE_LOAD_BUDGET_S") or serve.get("load_budget_s", DEFAULT_LOAD_BUDGET_S)
    first = env.get("SYSTEM1_PROVIDER") or gateway.get("provider", "embedded")
    fallback = env["SYSTEM1_FALLBACK"] if "SYSTEM1_FALLBACK" in env else gateway.get("fallback")
    if isinstance(fallback, str):  # "a,b" as config/settings.py reads it
        fallback = fallback.split(",")
    if not isinstance(fallback, list):  # anything else: config/settings.py reports it; no rung here
        fallback = []
    key_env = serve.get("api_key_env")
    return ConfigPeek(
        deadline_s=_number(deadline, DEFAULT_DEADLINE_S, 0, 3600),
        load_budget_s=_number(budget, DEFAULT_LOAD_BUDGET_S, 0, 3600),
        autostart=config_tables.autostart(data if readable else None, env),
        api_key_env=key_env if isinstance(key_env, str) and key_env else None,
        first_kind=kinds.get(str(first), str(first)),
        kinds=kinds,
        chain=[str(first), *(n.strip() for n in fallback if isinstance(n, str) and n.strip())],
    )


class Daemon:
    """A running daemon, as its port file describes it."""

    def __init__(self, pid: int, host: str, port: int, url: str, started: float, fingerprint: str,
                 api_key: str | None = None):
        self.pid, self.host, self.port, self.url = pid, host, port, url
        self.started, self.fingerprint, self.api_key = started, fingerprint, api_key

    def post(self, path: str, payload: Any, timeout_s: float, query: dict[str, str] | None = None) -> dict[str, Any]:
        body = json.dumps(payload, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        if query:
            from urllib.parse import quote  # ≈ 2 ms: only when there is a query to encode
        target = path + ("?" + "&".join(f"{quote(k)}={quote(v, safe='')}" for k, v in query.items()) if query else "")
        return self._call("POST", path, target, body, timeout_s)

    def get(self, path: str, timeout_s: float) -> dict[str, Any]:
        return self._call("GET", path, path, None, timeout_s)

    def _call(self, method: str, path: str, target: str, body: bytes | None, timeout_s: float) -> dict[str, Any]:
        end = time.monotonic() + timeout_s
        for first in (True, False):
            host = "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host
            head = [f"{method} {target} HTTP/1.1", f"Host: {host}:{self.port}", "Accept: application/json",
                    "Connection: close"]
            if body is not None:
                head += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
            if self.api_key:
                head.append(f"Authorization: Bearer {self.api_key}")
            request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (body or b"")
            try:
                status, data = _exchange(host, self.port, request, max(end - time.monotonic(), 0.001))
            except OSError as exc:  # refused, reset, timeout, a torn reply
                if first and isinstance(exc, ConnectionRefusedError) and self._follow():
                    continue
                kind = "timeout" if isinstance(exc, (socket.timeout, TimeoutError)) else \
                    str(exc) if isinstance(exc, TornReply) else type(exc).__name__
                raise DaemonUnavailable(f"{method} {path}: {kind}") from None
            if not (first and status == 401 and self._follow()):
                break
        try:
            answer = bounded_json.loads(data)
        except (ValueError, RecursionError):
            raise DaemonUnavailable(f"{method} {path}: HTTP {status}, not JSON") from None
        if not isinstance(answer, dict):
            raise DaemonUnavailable(f"{method} {path}: HTTP {status}, not a JSON object")
        if status >= 300 and not is_result(answer):
            # 401, 404, 413, 5xx without a gateway result: nothing the caller can print.
            raise DaemonUnavailable(f"{method} {path}: HTTP {status}")
        return answer

    def describe(self) -> str:
        return f"pid {self.pid}, {self.url}"

    def _follow(self) -> bool:
        """Once a call was refused (401: each daemon start has its own token; or the port is
        closed): when the port file now names another live start of a daemon with the same
        settings, take its address and token (a long-lived process keeps its Daemon across
        the daemon's restarts). False when there is nothing new to follow."""
        record = _live_record()
        if not self.fingerprint or record is None or record["fingerprint"] != self.fingerprint or \
                (record["pid"], record["started"]) == (self.pid, self.started):
            return False
        fresh = _from_record(record, None)
        self.pid, self.host, self.port, self.url, self.started = fresh.pid, fresh.host, fresh.port, fresh.url, \
            fresh.started
        self.api_key = fresh.api_key or self.api_key  # a daemon from before tokens: the key we had
        return True


class TornReply(OSError):
    """The daemon closed the connection before a whole HTTP response arrived."""


def _exchange(host: str, port: int, request: bytes, timeout_s: float) -> tuple[int, bytes]:
    """One HTTP/1.1 request and its response (status, body) over a fresh loopback connection,
    all within timeout_s (the connect within CONNECT_TIMEOUT_S). Raises OSError."""
    end = time.monotonic() + max(timeout_s, 0.01)
    # The host as bytes: getaddrinfo encodes a str host with the idna codec, whose first use
    # imports stringprep and unicodedata (≈ 2 ms per hook process).
    address = host.encode("ascii") if host.isascii() else host
    connect_s = min(CONNECT_TIMEOUT_S, max(timeout_s, 0.01))
    # typeshed's create_connection wants a str host; getaddrinfo, which it calls, takes bytes too
    with socket.create_connection((address, port), timeout=connect_s) as sock:  # type: ignore[arg-type]
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(max(end - time.monotonic(), 0.001))
        sock.sendall(request)
        data, head = bytearray(), None  # a bytearray: appending is not a copy of all so far
        status, length, chunked = 0, None, False
        while True:
            # The whole read, not each recv: a peer sending a byte at a time still ends by `end`
            # (a guard hook held 18 s against a 1.5 s budget, and Claude Code kills it at 5 s).
            left = end - time.monotonic()
            if left <= 0:
                raise socket.timeout("the reply was still arriving at the deadline")
            sock.settimeout(left)
            chunk = sock.recv(65536)
            seen = max(0, len(data) - 3)  # the end of the head may straddle two chunks
            data += chunk
            if len(data) > MAX_REPLY_BYTES:
                raise TornReply(f"reply larger than {MAX_REPLY_BYTES} bytes")
            cut = data.find(b"\r\n\r\n", seen) if head is None else -1
            if cut >= 0:
                head, data = bytes(data[:cut]), data[cut + 4:]
                status, headers = _head(head)
                length = headers.get("content-length")
                chunked = "chunked" in headers.get("transfer-encoding", "")
            if head is not None and not chunked and length is not None and len(data) >= int(length):
                return status, bytes(data[:int(length)])
            if not chunk:  # the server closed: the body ends here
                if head is None or (length is not None and len(data) < int(length)):
                    raise TornReply("incomplete reply")
                return status, _unchunk(bytes(data)) if chunked else bytes(data)


def _head(head: bytes) -> tuple[int, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise TornReply("not an HTTP response")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("content-length") is not None and not headers["content-length"].isdigit():
        raise TornReply("bad Content-Length")
    return int(parts[1]), headers


def _unchunk(data: bytes) -> bytes:
    body = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            raise TornReply("bad chunk") from None
        if size == 0:
            return body
        body, data = body + data[:size], data[size + 2:]
    raise TornReply("incomplete reply")


def is_result(answer: dict[str, Any]) -> bool:
    """A gateway result (judge or decide), whatever the HTTP status that carried it."""
    return isinstance(answer.get("status"), str) and "error" in answer and isinstance(answer.get("attempts"), list)


def _from_record(record: dict[str, Any], settings: ConfigPeek | None) -> Daemon:
    # The daemon's per-user token (its port file is this user's only); a daemon from before
    # tokens has none, and a team server's [serve] api_key_env key is accepted as well.
    key = record.get("token") or (os.environ.get(settings.api_key_env) if settings and settings.api_key_env else None)
    return Daemon(pid=record["pid"], host=record["host"], port=record["port"], url=record["url"],
                  started=float(record["started"]), fingerprint=record["fingerprint"], api_key=key or None)


def _live_record() -> dict[str, Any] | None:
    """The port file's record while its daemon lives: a process of this user (not this one)
    with that pid, and daemon.lock held. A daemon killed without cleanup leaves its port
    file, and another local user may take its port and even its pid; the lock alone dies with
    the daemon (daemon_files: the client never sends such a listener the token or a request)."""
    record = daemon_files.read_port()
    if record is None or record["pid"] == os.getpid() or not daemon_files.pid_alive(record["pid"]) or \
            not daemon_files.lock_held():
        return None
    return record


def locate(settings: ConfigPeek | None = None) -> Located:
    """(the daemon named by the port file if it is alive, whether its settings are this
    process's). A missing, torn or stale port file is (None, False)."""
    record = _live_record()
    if record is None:
        return Located(None, False)
    return Located(_from_record(record, settings), record["fingerprint"] == daemon_files.fingerprint())


def find() -> Daemon | None:
    """The running daemon of this user with this process's settings, or None."""
    daemon, same = locate(peek())
    return daemon if same else None


def wait_ready(budget_s: float, settings: ConfigPeek | None = None, alive: Any = None) -> Located:
    """Wait until the port file names a live daemon whose /healthz says ok, up to budget_s;
    give up early when `alive()` says no process is starting or serving any more."""
    end = time.monotonic() + budget_s
    while time.monotonic() < end:
        daemon, same = locate(settings)
        if daemon is not None:
            try:
                if daemon.get("/healthz", min(1.0, max(end - time.monotonic(), 0.01))).get("status") == "ok":
                    return Located(daemon, same)
            except DaemonUnavailable:
                pass
        elif alive is not None and not alive():
            return Located(None, False)
        time.sleep(READY_POLL_S)
    return Located(None, False)
