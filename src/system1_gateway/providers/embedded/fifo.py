"""A first-come, first-served lock for the one llama.cpp context several clients share.

`threading.Lock` wakes waiters in no particular order: under a daemon serving several
clients, a request could be overtaken again and again until its deadline. Here each caller
takes a ticket and the lock passes to the oldest waiting ticket. Background work (preparing
a new question) asks with `urgent=False`: it gets the lock only when no request is waiting,
and `waiting()` lets it give the lock back as soon as one arrives.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable


class FifoLock:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[int] = deque()
        self._tickets = itertools.count()
        self._held = False
        self._holder_urgent = True

    def acquire(self, timeout: float | None = None, urgent: bool = True,
                preempt: Callable[[], None] | None = None) -> bool:
        """Waits for the lock in arrival order; False when `timeout` (seconds) passes first.
        A non-urgent caller also waits for every urgent one, present or arriving. An urgent
        caller that finds non-urgent work holding the lock calls `preempt()` (under the
        lock's own mutex, so no holder can slip in between)."""
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        with self._cond:
            ticket = next(self._tickets)
            if urgent:
                self._queue.append(ticket)
                if self._held and not self._holder_urgent and preempt is not None:
                    preempt()
            try:
                while self._held or (self._queue and self._queue[0] != ticket) or (not urgent and self._queue):
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        return False
                    self._cond.wait(left)
                self._held, self._holder_urgent = True, urgent
                return True
            finally:
                if urgent:
                    self._queue.remove(ticket)
                    self._cond.notify_all()  # the next ticket may now be at the head

    def release(self) -> None:
        with self._cond:
            self._held = False
            self._cond.notify_all()

    def waiting(self) -> int:
        """Urgent callers waiting for the lock now."""
        with self._cond:
            return len(self._queue)
