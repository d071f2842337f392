"""The labelling loop in the terminal: one key per answer, Enter accepts the proposal.

Built on rich (already a dependency) and a few lines of termios, not textual: a labelling
pass is a sequence of single keystrokes on one card at a time; a full-screen app would add a
dependency and a second of start-up for no gain, and would take over the screen of the
Claude Code `!` prompt or a plain SSH session. Every answer is written to the labels file as
it is given, so `q` (or Ctrl-C, or a lost terminal) loses nothing and the next run resumes.

Keys: y / n for yes-no questions; 1–9 then a–z for options; Enter accepts the proposal;
s skips; u undoes the last answer; q quits.
"""

from __future__ import annotations

import os
import sys
from typing import Callable, TextIO

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from .pending import Item, LabelStore

SHOWN_CHARS = 900
CHOICE_KEYS = "123456789abcdefghijklmnoprtvwxz"  # not s, u, q (commands), nor y (yes on yes/no cards)


def key_reader(stream: TextIO) -> Callable[[], str]:
    """One keystroke at a time from a terminal (cbreak mode, restored after each key);
    from a pipe or file, one line per key (so scripts can drive it)."""
    if stream.isatty() and os.name == "posix":
        import termios
        import tty

        fd = stream.fileno()

        def read_tty() -> str:
            saved = termios.tcgetattr(fd)
            try:
                tty.setcbreak(fd, termios.TCSANOW)  # not the default TCSAFLUSH: it drops keys typed ahead
                ch = os.read(fd, 1).decode("utf-8", "replace")
            finally:
                termios.tcsetattr(fd, termios.TCSADRAIN, saved)
            if ch == "\x03":
                raise KeyboardInterrupt
            return "\n" if ch in "\r\n" else ch
        return read_tty

    def read_line() -> str:
        line = stream.readline()
        if not line:
            return "q"  # end of input: stop, as q would
        return line.strip()[:1] or "\n"
    return read_line


def keys_for(item: Item) -> dict[str, str]:
    if item.labels in (["true", "false"],):
        return {"y": "true", "n": "false"}
    return {CHOICE_KEYS[i]: label for i, label in enumerate(item.labels[:len(CHOICE_KEYS)])}


def _card(item: Item, index: int, total: int, done: int) -> Panel:
    text = item.text if len(item.text) <= SHOWN_CHARS else item.text[:SHOWN_CHARS] + " …"
    keys = keys_for(item)
    question = {"prompt": "routing feature", "agent": "routing feature of a subagent brief",
                "guard": "Bash guard", "outcome": "did this subagent spawn succeed?"}.get(item.origin, item.origin)
    lines = [f"[dim]{index + 1}/{total} · labelled {done} · {question}[/dim]", "",
             f"[bold]{escape(item.name)}[/bold]" + (f"  [dim]({escape(item.note)})[/dim]" if item.note else ""),
             "", escape(text), ""]
    shown = []
    for key, label in keys.items():
        mark = " ◀ proposed" if label == item.proposed else ""
        shown.append(f"[cyan]{key}[/cyan] {escape('yes' if label == 'true' else 'no' if label == 'false' else label)}{mark}")
    lines.append("   ".join(shown))
    conf = f" ({item.confidence:.2f})" if item.confidence is not None else ""
    lines.append(f"[dim]Enter accepts the proposal{conf} · s skip · u undo · q quit[/dim]"
                 if item.proposed else "[dim]no proposal · s skip · u undo · q quit[/dim]")
    return Panel("\n".join(lines), title="system1 calibrate", expand=True)


def label_items(items: list[Item], store: LabelStore, console: Console | None = None,
                read_key: Callable[[], str] | None = None) -> dict[str, int]:
    """Walk the items that have no label yet; returns counts (labelled, confirmed, corrected,
    skipped, undone) and whether the user quit early."""
    console = console or Console(stderr=True)
    read_key = read_key or key_reader(sys.stdin)
    todo = [item for item in items if store.label_of(item.key) is None]
    counts = {"labelled": 0, "confirmed": 0, "corrected": 0, "skipped": 0, "undone": 0, "quit": 0, "left": 0}
    history: list[int] = []
    i = 0
    while i < len(todo):
        item = todo[i]
        keys = keys_for(item)
        console.print(_card(item, i, len(todo), counts["labelled"]))
        try:
            key = read_key()
        except KeyboardInterrupt:
            key = "q"
        if key == "q":
            counts["quit"] = 1
            break
        if key == "u":
            if history:
                i = history.pop()
                store.retract(todo[i].key)
                counts["undone"] += 1
                counts["labelled"] -= 1
                console.print("[yellow]undone[/yellow]")
            continue
        if key == "s":
            counts["skipped"] += 1
            i += 1
            continue
        if key == "\n" and item.proposed:
            label = item.proposed
        elif key in keys:
            label = keys[key]
        else:
            console.print(f"[red]{escape(repr(key))} is not an answer here[/red]")
            continue
        by = "confirmed" if label == item.proposed else "user"
        store.give(item, label, by)
        counts["labelled"] += 1
        counts["confirmed" if by == "confirmed" else "corrected"] += 1
        history.append(i)
        i += 1
    counts["left"] = sum(1 for item in todo if store.label_of(item.key) is None)
    return counts
