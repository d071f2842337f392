"""The input as byte ranges of whole lines: what a batch is, and where a resumed run starts.

The driver never holds the rows: it scans IN once for the offset of every `batch_size`-th
non-empty line (a few thousand integers for a million rows) and each worker reads its own
range from the file. OUT holds one result line per input row, in input order, so a resumed
run skips as many rows as OUT has complete lines (a torn last line is cut off first).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator


@dataclass(frozen=True)
class Chunk:
    index: int
    first_row: int  # 0-based row number of its first line (rows are non-empty lines)
    first_line: int  # 1-based line number in IN, for error messages
    start: int  # byte offsets in IN
    end: int


def done_rows(out: Path) -> int:
    """Rows already in OUT; a last line without its newline (a crash mid-write) is removed."""
    if not out.exists():
        return 0
    size = out.stat().st_size
    if size == 0:
        return 0
    with out.open("rb+") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) != b"\n":
            keep = _last_newline(fh, size) + 1
            fh.truncate(keep)
        fh.seek(0)
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def _last_newline(fh, size: int) -> int:
    pos, step = size, 1 << 16
    while pos > 0:
        start = max(0, pos - step)
        fh.seek(start)
        block = fh.read(pos - start)
        found = block.rfind(b"\n")
        if found >= 0:
            return start + found
        pos = start
    return -1


def plan(path: Path, batch_size: int, skip_rows: int = 0) -> Iterator[Chunk]:
    """Chunks of `batch_size` rows from row `skip_rows` on, in order (one pass, flat memory)."""
    index = row = first_row = first_line = 0
    start: int | None = None  # the byte offset of the chunk being gathered, None between chunks
    offset = 0
    with path.open("rb") as fh:
        for number, line in enumerate(fh, start=1):
            here, offset = offset, offset + len(line)
            if not line.strip():
                continue
            if row >= skip_rows:
                if start is None:
                    start, first_row, first_line = here, row, number
                if row - first_row + 1 == batch_size:
                    yield Chunk(index, first_row, first_line, start, offset)
                    index, start = index + 1, None
            row += 1
    if start is not None:
        yield Chunk(index, first_row, first_line, start, offset)


def read(path: str | Path, chunk: Chunk) -> Iterator[tuple[int, bytes]]:
    """(line number, raw line) for the non-empty lines of a chunk."""
    with open(path, "rb") as fh:
        fh.seek(chunk.start)
        data = fh.read(chunk.end - chunk.start)
    for number, line in enumerate(data.splitlines(keepends=True), start=chunk.first_line):
        if line.strip():
            yield number, line
