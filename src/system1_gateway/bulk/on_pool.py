"""Bulk judging without Ray: a bounded local process pool (each process one warm gateway),
results written in input order as they complete."""

from __future__ import annotations

import multiprocessing
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Callable, Iterable

from .chunks import Chunk
from .worker import Worker

_worker: Worker | None = None


def _start(config: Any, provider: str | None) -> None:
    global _worker
    _worker = Worker(config, provider)


def _judge(path: str, chunk: Chunk) -> dict[str, Any]:
    assert _worker is not None
    return _worker.judge(path, chunk)


def run(path: Path, chunks: Iterable[Chunk], config: Any, provider: str | None, workers: int,
        write: Callable[[dict[str, Any]], None]) -> None:
    """At most 2 batches per process in flight, so memory and the loss on a crash stay bounded.

    Workers are spawned, never forked: a fork copies the caller's locks in whatever state its
    other threads left them (the counter flusher, an engine's thread pool), and a child that
    inherits a held lock hangs forever -- this hung a CI run. Spawn costs one import per worker."""
    spawn = multiprocessing.get_context("spawn")
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=spawn, initializer=_start,
                                 initargs=(config, provider)) as pool:
            pending: deque[Future] = deque()
            for chunk in chunks:
                pending.append(pool.submit(_judge, str(path), chunk))
                while len(pending) >= 2 * workers or (pending and pending[0].done()):
                    write(pending.popleft().result())
            while pending:
                write(pending.popleft().result())
    except BrokenProcessPool as exc:  # what was written stays written: a rerun resumes
        raise RuntimeError(
            "a bulk worker process died (out of memory, killed, or a calling script that runs "
            "bulk.run() at import: call it under `if __name__ == \"__main__\":`); "
            "rerun to resume") from exc
