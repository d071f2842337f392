"""One worker's gateway and what it does with a batch: the same per-line rules as
`judge --jsonl` (a bad line gets its own invalid_request; the next line is still judged)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from .. import bounded_json
from .chunks import Chunk, read

BATCH_ROWS = 256  # rows whose fast-tier work is computed together (as judge --jsonl's BATCH_LINES)


def peak_rss_mb() -> float:
    """This process's peak resident memory (Linux and macOS; 0 where unknown)."""
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024, 1)


class Worker:
    """Holds one gateway, warmed once: a Ray actor, or a process of the local pool."""

    def __init__(self, config: Any, provider: str | None):
        from ..core.gateway import Gateway

        # this worker's own warm engine (built here, not through daemon/dispatch.py): never the daemon
        self.provider = provider
        self.gateway = Gateway(config, record=False)  # one summary, not an audit line per row
        self.gateway.warm(provider, full=False)  # the accurate tier loads if a row needs it

    def judge(self, path: str | Path, chunk: Chunk) -> dict[str, Any]:
        """The chunk's result lines (one text, in order) and its tallies. Rows are answered in
        groups of BATCH_ROWS whose fast-tier work the gateway computes together first
        (core.Gateway.prefetch): the same answers, a few batched encoder runs per group."""
        lines: list[str] = []
        codes: Counter[str] = Counter()
        tokens = {"input_tokens": 0, "output_tokens": 0, "reported": 0}
        rows = list(read(path, chunk))
        for start in range(0, len(rows), BATCH_ROWS):
            group = [self._parse(number, raw) for number, raw in rows[start:start + BATCH_ROWS]]
            self.gateway.prefetch([payload for _, payload, problem in group if problem is None], self.provider)
            try:
                for number, payload, problem in group:
                    result = problem if problem is not None else self._answer(number, payload)
                    error = result.get("error")
                    codes[error["code"] if error else "ok"] += 1
                    usage = result.get("usage") or {}
                    if usage.get("input_tokens") is not None or usage.get("output_tokens") is not None:
                        tokens["reported"] += 1
                        tokens["input_tokens"] += usage.get("input_tokens") or 0
                        tokens["output_tokens"] += usage.get("output_tokens") or 0
                    lines.append(json.dumps(result, ensure_ascii=False))
            finally:
                self.gateway.forget(self.provider)
        return {"index": chunk.index, "text": "".join(line + "\n" for line in lines), "rows": len(lines),
                "codes": dict(codes), "tokens": tokens, "rss_mb": peak_rss_mb()}

    @staticmethod
    def _parse(number: int, raw: bytes) -> tuple[int, Any, dict[str, Any] | None]:
        """(line number, payload, None), or (line number, None, the line's invalid_request)."""
        from ..core.gateway import error_result
        from ..model.errors import InvalidRequest

        try:
            return number, bounded_json.loads(raw.decode("utf-8-sig")), None
        except UnicodeDecodeError as exc:
            return number, None, error_result("judge", InvalidRequest(f"line {number}: not UTF-8 text (byte {exc.start})"))
        except (ValueError, RecursionError) as exc:
            return number, None, error_result("judge", InvalidRequest(f"line {number}: invalid JSON: {exc}"))

    def _answer(self, number: int, payload: Any) -> dict[str, Any]:
        result = self.gateway.judge(payload, provider=self.provider)
        error = result.get("error")
        if error and error.get("code") == "invalid_request":
            error["message"] = f"line {number}: {error['message']}"
        return result

    def close(self) -> None:
        self.gateway.close()
