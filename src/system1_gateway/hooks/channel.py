"""The guard's channel: hooks/guard.sh asks the plugin's hook server over loopback TCP.

Why not an `mcp_tool` call: such a call fails open when its server is absent (not installed,
crashed, not yet connected, hung). One `command` handler, a shell script that hands the hook
input to this warm process and prints its answer, asks the process itself: no answer, and it
runs the command guard on the same input.

Why TCP on loopback, and what authenticates an answer. The answer must come from this server
and from nothing else: a hook's "allow" skips Claude Code's permission prompt, and silence on a
destructive command lets it run. Named pipes in the plugin data folder would not do: any
process of the user could write them, even one in Claude Code's sandbox, where the folder is
mounted read-only but a FIFO stays writable.
Here each call is its own TCP connection that guard.sh makes (bash's `/dev/tcp`), and the
answer comes back on that connection:
  * a sandboxed command cannot reach it: on Linux the sandbox has its own network namespace
    (its 127.0.0.1 is not ours) and its own pid namespace (it cannot see guard.sh's sockets in
    /proc); on macOS its Seatbelt profile lets it connect only to the sandbox's proxy ports.
    Even where it can connect (`allowLocalBinding` on macOS, a proxy told to allow localhost),
    it can only ask questions:
    it cannot write into another caller's connection, nor take the port while we hold it;
  * another user can connect but holds neither key, so it is closed at once, and it cannot
    make guard.sh talk to its own listener while this server is alive (guard.sh checks the pid;
    the port is ours until we exit);
  * an unconfined process of the same user can read the keys (as it can rewrite Claude Code's
    settings); what it can still do is said in docs/guard.md. Even then nothing it answers can
    become an "allow": guard.sh prints only answers it builds itself from a closed set.

The announce file `<plugin data>/hook-servers/<Claude Code's pid>` (0600, in a 0700 folder)
holds one line, `<server pid> <port> <request key> <answer key>`, both keys fresh per start.
One call, one connection:

  guard.sh -> server   "<request key> <n>\\n" then the n bytes of hook input
  approve.sh -> server "<request key> <n> approve\\n" then the n bytes (PermissionRequest, hooks/approve.py)
  server -> guard.sh   "<answer key> <code> <text>\\n", code one of:
                         none     say nothing
                         ask      permissionDecision "ask", reason <text>
                         deny     permissionDecision "deny" (auto mode), reason <text>
                         context  additionalContext <text> (auto mode below the deny bar)
                         allow    (approve calls only, text empty) PermissionRequest decision "allow"
                       <text> is a JSON string's inside in printable ASCII with no `"` and no
                       `\\` but in `\\uXXXX` escapes: it cannot end the string it is put in.
An approve call is answered `allow` or `none` and nothing else (its deadline and its failures
are `none`: no approval); a guard call is never answered `allow` (guard.sh would not print it).

A connection that has not sent a well-formed request with the request key within REQUEST_S
is closed; past MAX_WAITING such connections the one waiting longest is closed, so a flood
cannot shut the owner out. Every call is answered by the server's deadline (its body, or the
failure policy: the guard asks); guard.sh waits somewhat longer before it runs the command
guard itself, so a hung or crashed server costs that wait, never the check. The hook input is
hostile data: it is parsed as the command path parses stdin, and nothing from it names a path.
"""

from __future__ import annotations

import hmac
import io
import os
import queue
import selectors
import socket
import threading
import time

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

from . import approve, common, guard

WORKERS = 16  # calls judged at once (parallel Bash calls); more wait for a worker, within the deadline
BACKLOG = 4096  # the kernel caps it (somaxconn); a full backlog would stall guard.sh's connect
REQUEST_S = 2.0  # a caller sends its request at once; a connection silent this long is closed
MAX_WAITING = 256  # connections not yet holding a whole request; past it the oldest is closed
MAX_HEADER = 128  # bytes of "<request key> <n>\n"
WRITE_S = 1.0  # how long an answer may wait for room in the connection
MAX_TEXT = 1000  # characters of an answer's text before escaping (a reason is a few hundred)
CODES = {"ask": "ask", "deny": "deny"}  # permissionDecision -> code
APPROVE = "approve"  # the kind word of an approve call's header (hooks/approve.sh)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return False  # another user's process: not ours
    return True


def escaped(text: str) -> str:
    """`text` as the inside of a JSON string that cannot end its string: printable ASCII kept,
    everything else (`"`, `\\`, controls, non-ASCII) as `\\uXXXX` (UTF-16, as JSON has it)."""
    out = []
    for char in text[:MAX_TEXT]:
        code = ord(char)
        if 32 <= code < 127 and char not in '"\\':
            out.append(char)
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
    return "".join(out)


def coded(out: dict[str, Any] | None, kind: str = "guard") -> str:
    """The hook output as "<code> <text>" (see the module's docstring). An output of another
    shape is a bug here: it is answered as a failure (the guard asks; an approval: none), never
    passed on. Only an approve call's exact allow becomes `allow`."""
    if kind == APPROVE:
        return "allow " if approve.is_allow(out) else "none "
    if not out:
        return "none "
    spec = out.get("hookSpecificOutput") if isinstance(out, dict) else None
    if isinstance(spec, dict) and set(out) == {"hookSpecificOutput"}:
        decision, reason = spec.get("permissionDecision"), spec.get("permissionDecisionReason")
        if decision in CODES and isinstance(reason, str) and "additionalContext" not in spec:
            return f"{CODES[decision]} {escaped(reason)}"
        note = spec.get("additionalContext")
        if decision is None and isinstance(note, str):
            return f"context {escaped(note)}"
    return "ask " + escaped("System-1 guard could not judge this command (the hook server gave an answer "
                            "of unknown shape); confirm it yourself, or run /system1:doctor.")


class Call:
    """One guard call: answered once, by its body or, at its deadline, by the failure policy."""

    def __init__(self, channel: Channel, conn: socket.socket, given: bytes, due: float, kind: str = "guard"):
        self.channel, self.conn, self.given, self.due, self.kind = channel, conn, given, due, kind
        self.payload: dict[str, Any] = {}
        self.lock, self.sent = threading.Lock(), False

    def deliver(self, out: dict[str, Any] | None) -> None:
        with self.lock:
            if self.sent:
                return
            self.sent = True
        line = f"{self.channel.answer_key} {coded(out, self.kind)}\n".encode("ascii")
        try:
            self.conn.settimeout(WRITE_S)
            self.conn.sendall(line)
        except OSError:
            pass  # the caller gave up (and runs the command guard): nothing is lost
        finally:
            self.conn.close()

    def late(self) -> None:
        if self.kind == APPROVE:
            self.deliver(None)  # no approval
            return
        try:
            out = guard.failed(common.Run("guard", payload=self.payload), "no answer within the hook server's deadline")
        except Exception:  # noqa: BLE001 - the deadline's answer must not be lost to a settings bug
            out = None
        self.deliver(out)


class Waiting:
    """A connection that has not yet sent its whole request."""

    def __init__(self, conn: socket.socket, now: float):
        self.conn, self.since, self.data, self.size, self.kind = conn, now, b"", -1, "guard"


class Channel:
    """One server's listener. A thread accepts and reads requests (non-blocking, so no caller
    can hold it) and keeps the deadlines; a pool of worker threads judges the calls (a call
    starts no thread: ≈ 0.2 ms each on this machine)."""

    def __init__(self, deadline_s: float, argv: list[str] | None = None):
        import secrets  # only here: the keys (secrets imports hashlib)

        self.deadline_s, self.argv = deadline_s, argv
        self.request_key, self.answer_key = secrets.token_hex(16), secrets.token_hex(16)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self.sock.bind(("127.0.0.1", 0))
            self.sock.listen(BACKLOG)
            self.sock.setblocking(False)
        except OSError:
            self.sock.close()
            raise
        self.port = self.sock.getsockname()[1]
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.sock, selectors.EVENT_READ)
        self.waiting: dict[socket.socket, Waiting] = {}  # insertion order: the oldest first
        self.lock = threading.Lock()
        self.calls: list[Call] = []  # in flight: answered by the listener at their deadline if need be
        self.jobs: queue.SimpleQueue[Call | None] = queue.SimpleQueue()
        self.workers, self.idle, self.stopped = 0, 0, False

    def line(self) -> str:
        """The announce file's line (see the module's docstring)."""
        return f"{os.getpid()} {self.port} {self.request_key} {self.answer_key}"

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.listen, name="guard-channel", daemon=True)
        thread.start()
        return thread

    def listen(self) -> None:
        while not self.stopped:
            try:
                self.turn()
            except Exception:  # noqa: BLE001 - a bug here must not end the channel: every later call would wait 6 s
                time.sleep(0.01)

    def turn(self) -> None:
        """One turn: answer overdue calls, accept and read, close what waited too long."""
        now = time.monotonic()
        with self.lock:
            self.calls = [c for c in self.calls if not c.sent]
            calls = list(self.calls)
        for call in calls:
            if call.due <= now:
                call.late()
        wake = min([c.due for c in calls if c.due > now] + [w.since + REQUEST_S for w in self.waiting.values()],
                   default=now + 1.0)
        for key, _ in self.selector.select(max(min(wake - now, 1.0), 0.001)):
            if key.fileobj is self.sock:
                self.accept()
            else:
                self.receive(key.fileobj)  # type: ignore[arg-type]
        now = time.monotonic()
        for conn, waiting in list(self.waiting.items()):
            if waiting.since + REQUEST_S > now:
                break  # the rest came later
            self.drop(conn)

    def accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # out of descriptors: make room, the caller's connect waits in the backlog
                if self.waiting:
                    self.drop(next(iter(self.waiting)))
                return
            conn.setblocking(False)
            if len(self.waiting) >= MAX_WAITING:
                self.drop(next(iter(self.waiting)))  # the longest waiting, not the newcomer
            self.waiting[conn] = Waiting(conn, time.monotonic())
            self.selector.register(conn, selectors.EVENT_READ)

    def receive(self, conn: socket.socket) -> None:
        waiting = self.waiting.get(conn)
        if waiting is None:
            return
        try:
            data = conn.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.drop(conn)
            return
        waiting.data += data
        if waiting.size < 0:
            head, newline, rest = waiting.data.partition(b"\n")
            if not newline:
                if len(head) > MAX_HEADER:
                    self.drop(conn)
                return
            words = head.split()
            if (len(head) > MAX_HEADER or len(words) not in (2, 3) or not words[1].isdigit()
                    or len(words) == 3 and words[2] != APPROVE.encode()
                    or not hmac.compare_digest(words[0], self.request_key.encode())
                    or int(words[1]) > common.MAX_PAYLOAD_BYTES):
                self.drop(conn)  # not our caller (or not a request): nothing is answered
                return
            waiting.size, waiting.data = int(words[1]), rest
            waiting.kind = APPROVE if len(words) == 3 else "guard"
        if len(waiting.data) >= waiting.size:
            self.selector.unregister(conn)
            del self.waiting[conn]
            conn.setblocking(True)
            call = Call(self, conn, waiting.data[:waiting.size], waiting.since + self.deadline_s, waiting.kind)
            self.dispatch(call)

    def drop(self, conn: socket.socket) -> None:
        self.waiting.pop(conn, None)
        try:
            self.selector.unregister(conn)
        except (KeyError, ValueError):
            pass
        conn.close()

    def dispatch(self, call: Call) -> None:
        with self.lock:
            self.calls.append(call)
            grow = self.idle == 0 and self.workers < WORKERS
            if grow:
                self.workers += 1
        if grow:
            threading.Thread(target=self.work, name=f"guard-worker-{self.workers}", daemon=True).start()
        self.jobs.put(call)

    def work(self) -> None:
        while True:
            with self.lock:
                self.idle += 1
            call = self.jobs.get()
            with self.lock:
                self.idle -= 1
            if call is None:
                return
            try:
                self.call(call)
            except Exception:  # noqa: BLE001 - a bug in one call: it gets the failure policy, the worker lives on
                call.late()

    def call(self, call: Call) -> None:
        """Answer one call (the listener answers it at its deadline if this is still running)."""
        if call.sent:
            return  # answered at its deadline while it waited for a worker
        if call.kind == APPROVE:
            run = common.Run("approve", self.argv, payload={})
            run.read(io.BytesIO(call.given))
            call.payload = run.payload
            call.deliver(common.answer(run, approve.body) if run.payload else None)
            return
        run = common.Run("guard", self.argv, payload={})
        run.read(io.BytesIO(call.given))
        call.payload = run.payload
        if not run.payload:  # unreadable, empty or not an object: not "no command", a failure
            call.deliver(guard.failed(run, "the hook input could not be read"))
        else:
            call.deliver(common.answer(run, guard.body, guard.failed))

    def close(self) -> None:
        """Stop listening (a guard.sh that connects from now on runs the command guard), then
        answer the calls still running with the failure policy."""
        self.stopped = True
        try:
            self.sock.close()
        except OSError:
            pass
        with self.lock:
            running = list(self.calls)
            workers = self.workers
        for call in running:
            call.late()
        for _ in range(workers):
            self.jobs.put(None)


def open_channel(deadline_s: float, argv: list[str] | None = None) -> Channel | None:
    """This server's channel, listening; None where guard.sh cannot use it (Windows: its pids
    are not the ones Git Bash sees) or the socket cannot be made: then guard.sh runs the command
    guard, slower and as safe."""
    if os.name == "nt":
        return None
    try:
        channel = Channel(deadline_s, argv)
    except OSError:
        return None
    channel.start()
    return channel
