"""Background preparation of new questions: their prompt prefix and bias reference.

A question the accurate tier has never seen costs seconds before any evidence is read (its
prefix decode, then one decode per definition for its reference): on 2 CPU cores more than
a request's whole budget. That work is queued here and done by one background thread while
the engine is idle; the request that brought the question is answered at once by a cheaper
path (the fast tier, or the llm uncorrected), and its rationale says so. Engine calls made
from here are non-urgent: a request arriving aborts them (fifo.FifoLock), they keep what they
finished (prefix chunks, each definition's answer) and are retried once the engine is idle.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable

from ...logs import LOGGER

log = logging.getLogger(LOGGER)
MAX_QUEUED = 64  # distinct questions waiting; beyond it the oldest is dropped (asked again later)
RETRY_PAUSE_S = 0.05  # after a pre-emption, before asking for the engine again


class Preparer:
    def __init__(self, preempted: type[BaseException]):
        self._preempted = preempted
        self._jobs: OrderedDict[str, Callable[[], None]] = OrderedDict()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._busy = False
        self._closed = False
        self._current: str | None = None  # the key of the job running

    def submit(self, key: str, job: Callable[[], None]) -> None:
        """Queues `job` once per key (a key already queued or running is not added again)."""
        with self._cond:
            if self._closed or key in self._jobs or key == self._running_key():
                return
            self._jobs[key] = job
            while len(self._jobs) > MAX_QUEUED:
                self._jobs.popitem(last=False)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="system1-embedded-prepare", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def pending(self) -> int:
        with self._cond:
            return len(self._jobs) + self._busy

    def wait(self, timeout_s: float) -> bool:
        """Blocks until nothing is queued or running; False when `timeout_s` passes first."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._jobs and not self._busy, timeout_s)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._jobs.clear()
            self._cond.notify_all()

    def join(self, timeout_s: float) -> bool:
        """After close(): waits for the background thread to finish its job; False on timeout."""
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout_s)
        return not thread.is_alive()

    def _running_key(self) -> str | None:
        return getattr(self, "_current", None)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._jobs or self._closed)
                if self._closed:
                    return
                key, job = self._jobs.popitem(last=False)
                self._busy, self._current = True, key
            requeue = False
            try:
                job()
            except self._preempted:
                requeue = True  # a request took the engine; progress is kept, carry on later
            except Exception as exc:  # noqa: BLE001 - a cache: never take the process down
                log.debug("preparing a question failed: %s", type(exc).__name__)
            with self._cond:
                self._busy, self._current = False, None
                if requeue and not self._closed:
                    self._jobs[key] = job
                    self._jobs.move_to_end(key, last=False)
                self._cond.notify_all()
            if requeue:
                with self._cond:
                    self._cond.wait(RETRY_PAUSE_S)
