"""`system1 bulk IN.jsonl OUT.jsonl`: judge millions of `judge --jsonl` requests at once.

On Ray Data when it is installed (`system1-gateway[scale]`: a local Ray started in this
process, or a cluster with `--ray ADDRESS`), else on a bounded local process pool (and it
says so). Either way: one warm gateway per worker, batches of whole lines read by the workers
from IN (the driver never holds the rows), results written to OUT in input order as they
arrive, and a resumed run skips the rows OUT already has.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import chunks
from .worker import peak_rss_mb

MIN_BATCH, MAX_BATCH = 16, 1000


@dataclass
class Summary:
    runner: str  # "ray" or "pool"
    workers: int
    batch_size: int
    rows: int = 0  # judged by this run
    resumed_from: int = 0  # rows OUT already had
    ok: int = 0
    errors: dict[str, int] = field(default_factory=dict)  # by error code
    seconds: float = 0.0
    rows_per_s: float = 0.0
    tokens: dict[str, int] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0, "reported": 0})
    peak_rss_mb: dict[str, float] = field(default_factory=lambda: {"driver": 0.0, "worker": 0.0})
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def ray_available() -> bool:
    return importlib.util.find_spec("ray") is not None and importlib.util.find_spec("pyarrow") is not None


def count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 20), b"")) + 1


def default_batch(rows: int, workers: int) -> int:
    """Eight batches per worker at least (the last ones keep every worker busy), no more than
    MAX_BATCH rows each (what a crash can cost), no fewer than MIN_BATCH (per-batch overhead)."""
    return max(MIN_BATCH, min(MAX_BATCH, math.ceil(rows / max(1, workers * 8))))


def run(source: str | Path, target: str | Path, *, provider: str | None = None, ray_address: str | None = None,
        runner: str = "auto", workers: int | None = None, batch_size: int | None = None,
        progress: Callable[[int, int], None] | None = None) -> Summary:
    """Judge every row of `source` into `target` (resuming it). `runner`: "auto" (Ray when
    installed), "ray" or "pool". Raises ConfigError for a broken config, OSError for files."""
    from ..config.settings import load_config

    source, target = Path(source), Path(target)
    if target.exists() and source.resolve() == target.resolve():
        raise RuntimeError(f"{target}: the output would overwrite the input")
    config = load_config()
    note = None
    if runner == "auto":
        runner = "ray" if ray_available() else "pool"
        if runner == "pool":
            note = ("ray is not installed (pip install 'system1-gateway[scale]'): judging on a local process "
                    "pool instead")
    if runner == "ray" and not ray_available():
        raise RuntimeError("--ray needs Ray Data: pip install 'system1-gateway[scale]'")
    if runner == "ray":
        from . import on_ray

        resources = on_ray.start(ray_address, workers)
        workers = workers or max(1, int(resources.get("CPU", 1)))
    else:
        workers = workers or max(1, os.cpu_count() or 1)
    total = count_lines(source)
    done = chunks.done_rows(target)
    size = batch_size or default_batch(max(0, total - done), workers)
    summary = Summary(runner=runner, workers=workers, batch_size=size, resumed_from=done, note=note)
    codes: Counter[str] = Counter()
    t0 = time.perf_counter()
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("ab") as out:
        def write(batch: dict[str, Any]) -> None:
            out.write(batch["text"].encode("utf-8"))
            out.flush()  # a crash loses only the batches still in flight
            summary.rows += batch["rows"]
            codes.update(batch["codes"])
            for key, n in batch["tokens"].items():
                summary.tokens[key] += n
            summary.peak_rss_mb["worker"] = max(summary.peak_rss_mb["worker"], batch["rss_mb"])
            if progress is not None:
                progress(done + summary.rows, total)

        plan = chunks.plan(source, size, skip_rows=done)
        if runner == "ray":
            on_ray.run(source, plan, config, provider, workers, write)
        else:
            from . import on_pool

            on_pool.run(source, plan, config, provider, workers, write)
    summary.seconds = round(time.perf_counter() - t0, 3)
    summary.peak_rss_mb["driver"] = peak_rss_mb()
    summary.rows_per_s = round(summary.rows / summary.seconds, 1) if summary.seconds else 0.0
    summary.ok = codes.pop("ok", 0)
    summary.errors = dict(sorted(codes.items()))
    return summary


def main(args: Any) -> int:
    """The CLI command: a progress bar on a terminal, the summary as JSON on stdout."""
    import json

    from ..model.errors import ConfigError

    bar = _Bar() if sys.stderr.isatty() else None
    try:
        summary = run(args.input, args.output, provider=args.provider, ray_address=args.ray,
                      runner="pool" if args.pool else ("ray" if args.ray else "auto"), workers=args.workers,
                      batch_size=args.batch_size, progress=bar.update if bar else None)
    except ConfigError as exc:
        print(json.dumps({"error": {"code": "config_error", "message": exc.message}}))
        return 2
    except (OSError, RuntimeError) as exc:
        print(json.dumps({"error": {"code": "invalid_request", "message": f"bulk: {exc}"}}))
        return 2
    finally:
        if bar:
            bar.close()
    if summary.note:
        print(f"system1 bulk: {summary.note}", file=sys.stderr)
    print(json.dumps(summary.as_dict(), indent=2 if args.pretty else None))
    return 0 if not summary.errors else 1


class _Bar:
    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

        self._progress = Progress("judging", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                  console=Console(stderr=True), transient=True)
        self._task = self._progress.add_task("bulk", total=None)
        self._progress.start()

    def update(self, done: int, total: int) -> None:
        self._progress.update(self._task, completed=done, total=total)

    def close(self) -> None:
        self._progress.stop()
