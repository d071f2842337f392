"""The guard's channel: hooks/guard.sh asks the plugin's hook server through named pipes.

Why not an `mcp_tool` call: such a call fails open when its server is absent (not installed,
crashed, not yet connected, hung), so the guard needed a command handler beside it, and that
fallback could only check that the server process was alive: a server alive but hung let the
call pass. One `command` handler, a POSIX sh script that
hands the hook input to this warm process and prints its answer, asks the process itself: no
answer, and it runs the command guard on the same input. Through the real CLI it costs a Bash
call what the pair did (docs/claude-code.md, "Hook handlers").

The folder `<plugin data>/hook-servers/<this server's pid>.d` (0700, made fresh by `open_channel`):

  calls      FIFO read here: one line per call, "<slot> <pid>" (a few bytes: one atomic write)
  lock<N>    slot N's claim: guard.sh creates it exclusively (sh `set -C`) holding its pid; it is
             removed here once that pid has exited, or by the sweep when its owner died before
             calling
  p<N>       slot N's hook input, as Claude Code wrote it on guard.sh's stdin
  r<N>       slot N's answer FIFO: one line "<pid> <hook output as one JSON line>". guard.sh
             holds it open (read-write) before it calls, so the answer never waits for a reader,
             and skips a line for another pid (an answer that came after its caller gave up)

Every call is answered by the server's deadline or when it stops (silence, or the failure
policy: the guard asks); an input that cannot be read is a failure, not "no command". guard.sh
waits somewhat longer (its `wait`) before it runs the command guard itself, so a
hung or crashed server costs that wait, never the check. The hook input is hostile data: it is
parsed as the command path parses stdin, and nothing from it names a path here (the slot and
pid are checked digits).
"""

from __future__ import annotations

import json
import os
import queue
import select
import threading
import time
TYPE_CHECKING = False  # `typing` costs ≈ 5 ms at import: annotations only (they are never evaluated)
if TYPE_CHECKING:
    from typing import Any

from . import common, guard

SLOTS = 16  # calls at once (parallel Bash calls); past them guard.sh runs the command guard
MAX_REQUEST = 64  # bytes of a "<slot> <pid>" line; a longer run without a newline is dropped
SWEEP_S = 5.0  # how often claims whose owner is gone are looked for
CLAIM_GRACE_S = 10.0  # a claim still without its pid after this long is abandoned
WRITE_S = 1.0  # how long an answer may wait for room in its pipe


def folder_of(data_dir: str, pid: int) -> str:
    return os.path.join(data_dir, f"{pid}.d")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return False  # another user's process now: not the caller that claimed the slot
    return True


class Call:
    """One guard call: answered once, by its body or, at its deadline, by the failure policy."""

    def __init__(self, channel: Channel, slot: int, pid: int):
        self.channel, self.slot, self.pid = channel, slot, pid
        self.due = time.monotonic() + channel.deadline_s
        self.payload: dict[str, Any] = {}
        self.lock, self.sent = threading.Lock(), False

    def deliver(self, out: dict[str, Any] | None) -> None:
        with self.lock:
            if self.sent:
                return
            self.sent = True
        self.channel.answer(self.slot, self.pid, out)

    def late(self) -> None:
        try:
            out = guard.failed(common.Run("guard", payload=self.payload), "no answer within the hook server's deadline")
        except Exception:  # noqa: BLE001 - the deadline's answer must not be lost to a settings bug
            out = None
        self.deliver(out)


class Channel:
    """One server's pipes: a listener thread reads `calls` and keeps the deadlines; each slot
    has a worker thread of its own (started on the slot's first call), so a call starts no
    thread (≈ 0.2 ms each on this machine, a third of a call's time here)."""

    def __init__(self, folder: str, deadline_s: float, argv: list[str] | None = None):
        self.folder, self.deadline_s, self.argv = folder, deadline_s, argv
        self.lock = threading.Lock()
        self.calls: dict[int, Call] = {}  # slot -> its call in flight (until its caller exited)
        self.workers: dict[int, queue.SimpleQueue[Call]] = {}
        self.fd = os.open(self.path("calls"), os.O_RDWR)  # our own writer too: never EOF, never blocks

    def path(self, name: str) -> str:
        return os.path.join(self.folder, name)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.listen, name="guard-channel", daemon=True)
        thread.start()
        return thread

    def listen(self) -> None:
        pending, swept = b"", time.monotonic()
        while True:
            try:
                pending, swept = self.turn(pending, swept)
            except Exception:  # noqa: BLE001 - a bug here must not end the channel: every later call would wait 6 s
                time.sleep(0.01)

    def turn(self, pending: bytes, swept: float) -> tuple[bytes, float]:
        """One turn of the listener: answer overdue calls, read requests, now and then sweep."""
        now = time.monotonic()
        with self.lock:
            waiting = [c for c in self.calls.values() if not c.sent]
        overdue = [c for c in waiting if c.due <= now]
        for call in overdue:
            call.late()
        wake = min([c.due for c in waiting if c.due > now], default=now + SWEEP_S)
        ready, _, _ = select.select([self.fd], [], [], max(min(wake, swept + SWEEP_S) - now, 0.001))
        if ready:
            pending += os.read(self.fd, 4096)
            *lines, pending = pending.split(b"\n")
            if len(pending) > MAX_REQUEST:
                pending = b""
            for line in lines:
                self.take(line)
        if time.monotonic() - swept >= SWEEP_S:
            self.sweep()
            swept = time.monotonic()
        return pending, swept

    def take(self, line: bytes) -> None:
        """Hand the call a request line names to its slot's worker, if the line is well formed
        and the slot has no call in flight."""
        words = line.split()
        if len(line) > MAX_REQUEST or len(words) != 2 or not all(w.isdigit() for w in words):
            return
        slot, pid = int(words[0]), int(words[1])
        if slot >= SLOTS or not 1 < pid < 1 << 31:
            return
        with self.lock:
            if slot in self.calls:
                return
            call = self.calls[slot] = Call(self, slot, pid)
            worker = self.workers.get(slot)
            if worker is None:
                worker = self.workers[slot] = queue.SimpleQueue()
                threading.Thread(target=self.work, args=(worker,), name=f"guard-slot-{slot}", daemon=True).start()
        worker.put(call)

    def work(self, calls: queue.SimpleQueue[Call]) -> None:
        while True:
            call = calls.get()
            try:
                self.call(call)
            except Exception:  # noqa: BLE001 - a bug in one call: it gets the failure policy, the slot stays usable
                call.late()
                self.release(call)

    def call(self, call: Call) -> None:
        """Answer one call (the listener answers it at its deadline if this is still running),
        then free its slot once its caller has exited."""
        run = common.Run("guard", self.argv, payload={})
        try:
            try:
                fd = os.open(self.path(f"p{call.slot}"), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
                with os.fdopen(fd, "rb") as given:
                    run.read(given)
            except OSError as exc:
                run.say(f"no hook input in slot {call.slot}: {exc}")
            call.payload = run.payload
            if not run.payload:  # unreadable, empty or not an object: not "no command", a failure
                call.deliver(guard.failed(run, "the hook input could not be read from its slot"))
            else:
                call.deliver(common.answer(run, guard.body, guard.failed))
        finally:
            self.release(call)

    def answer(self, slot: int, pid: int, out: dict[str, Any] | None) -> None:
        """Write the answer line into the slot's pipe; a caller no longer reading loses nothing."""
        # ASCII escapes: one line, whatever the command held (a lone surrogate cannot be UTF-8)
        text = json.dumps(out, ensure_ascii=True, separators=(",", ":")) if out else "{}"
        data = f"{pid} {text}\n".encode("ascii")
        try:
            fd = os.open(self.path(f"r{slot}"), os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return  # ENXIO: nobody holds the pipe (the caller gave up and exited)
        try:
            end = time.monotonic() + WRITE_S
            while data:
                try:
                    data = data[os.write(fd, data):]
                except BlockingIOError:
                    if time.monotonic() > end:
                        return
                    time.sleep(0.001)
        except OSError:
            pass
        finally:
            os.close(fd)

    def release(self, call: Call) -> None:
        """Free the call's slot once its caller has exited (it may still be reading, or running
        the command guard on this slot's input after giving up on us)."""
        step = 0.001
        while alive(call.pid):
            time.sleep(step)
            step = min(step * 2, 0.05)
        with self.lock:  # first: a request for the slot that comes once its lock is gone is taken
            self.calls.pop(call.slot, None)
        try:
            os.unlink(self.path(f"p{call.slot}"))  # the command's text is kept no longer than the call
        except OSError:
            pass
        self.unclaim(call.slot, call.pid)

    def unclaim(self, slot: int, pid: int | None) -> None:
        """Remove slot's claim if `pid` (None: anyone) still holds it."""
        lock = self.path(f"lock{slot}")
        try:
            with open(lock) as claim:
                holder = claim.read().strip()
            if pid is None or holder == str(pid):
                os.unlink(lock)
        except OSError:
            pass

    def sweep(self) -> None:
        """Remove claims whose owner is gone without a call here (killed before it called)."""
        now = time.time()
        for slot in range(SLOTS):
            with self.lock:
                if slot in self.calls:
                    continue
            lock = self.path(f"lock{slot}")
            try:
                with open(lock) as claim:
                    holder = claim.read().strip()
                age = now - os.stat(lock).st_mtime
            except OSError:
                continue
            if (holder.isdigit() and not alive(int(holder))) or (not holder.isdigit() and age > CLAIM_GRACE_S):
                self.unclaim(slot, None)

    def close(self) -> None:
        """Answer the calls still running with the failure policy, then remove the folder (a
        guard.sh that finds no pipe runs the command guard)."""
        with self.lock:
            running = list(self.calls.values())
        for call in running:
            call.late()
        remove(self.folder)


def open_channel(data_dir: str, deadline_s: float, argv: list[str] | None = None) -> Channel | None:
    """This server's channel under `data_dir` (`<plugin data>/hook-servers`), answering; None
    where there are no named pipes (Windows) or the folder cannot be made: then guard.sh runs
    the command guard, slower and as safe."""
    if not hasattr(os, "mkfifo") or not data_dir or not os.path.isabs(data_dir):
        return None
    sweep_dead(data_dir)
    folder = folder_of(data_dir, os.getpid())
    try:
        os.makedirs(data_dir, mode=0o700, exist_ok=True)
        remove(folder)  # an earlier process's of this pid
        os.mkdir(folder, 0o700)
        for name in ["calls", *(f"r{slot}" for slot in range(SLOTS))]:
            os.mkfifo(os.path.join(folder, name), 0o600)
        channel = Channel(folder, deadline_s, argv)
    except OSError:
        remove(folder)
        return None
    channel.start()
    return channel


def remove(folder: str) -> None:
    """Remove a channel folder (flat: pipes and files), whatever is left of it; a link in its
    place is removed, never followed."""
    if os.path.islink(folder):
        try:
            os.unlink(folder)
        except OSError:
            pass
        return
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass
    try:
        os.rmdir(folder)
    except OSError:
        pass


def sweep_dead(data_dir: str) -> None:
    """Remove the folders of servers that are gone (a crash leaves its pipes behind)."""
    try:
        names = os.listdir(data_dir)
    except OSError:
        return
    for name in names:
        pid = name[:-2]
        if name.endswith(".d") and pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid)):
            remove(os.path.join(data_dir, name))

