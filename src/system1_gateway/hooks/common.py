"""What every hook shares: one run (stdin payload, `--explain` timings on stderr, exactly
one stdout), the warm daemon's judge within a budget, the routing features, the local log.

A hook never fails Claude Code's turn: anything unexpected is caught by `main`, explained
under `--explain`, and the hook exits 0 with no output (the guard applies its failure
policy instead, see guard.py).
"""

from __future__ import annotations

import json
import os
import sys
import time

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Callable

from .. import bounded_json, toggle
from ..config import tables as config_tables
from ..daemon import client
from ..routing import FEATURES as ROUTING_FEATURES
from ..routing import log as routing_log

MAX_PAYLOAD_BYTES = 8 << 20  # Claude Code's hook input is small; a huge one is not ours to parse
MARGIN_S = 0.1  # the engine's deadline is the budget minus this: the HTTP reply fits in the cap


class Run:
    """One hook invocation: its payload, settings, clock and `--explain` trail."""

    def __init__(self, name: str, argv: list[str] | None = None, payload: dict[str, Any] | None = None):
        """`argv` (the command path: `--explain`) or `payload` (a warm process: the hook input
        as a dict, already parsed; hooks/serve.py). Settings are read per run either way."""
        self.name = name
        self.explain = "--explain" in (argv or ())
        self.t0 = time.perf_counter()
        self.payload: dict[str, Any] = payload if isinstance(payload, dict) else {}
        self.served = payload is not None  # in a warm process (the hook server), not a new interpreter
        self.bars: dict[str, float] = {}  # thresholds `system1 calibrate` fitted, by feature
        self.settings, self.problem = config_tables.load()
        if self.problem:
            self.say(f"config: {self.problem}")

    def ms(self) -> float:
        return (time.perf_counter() - self.t0) * 1000

    def say(self, message: str) -> None:
        if self.explain:
            print(f"[system1 {self.name} {self.ms():7.1f} ms] {message}", file=sys.stderr, flush=True)

    def read(self, stream: Any = None) -> dict[str, Any]:
        """The hook input from `stream` (stdin by default), read as the command path reads it."""
        raw = (sys.stdin.buffer if stream is None else stream).read(MAX_PAYLOAD_BYTES + 1)
        if len(raw) > MAX_PAYLOAD_BYTES:
            self.say(f"input larger than {MAX_PAYLOAD_BYTES} bytes: ignored")
            return {}
        try:
            payload = bounded_json.loads(raw.decode("utf-8", "replace") or "{}")
        except ValueError as exc:
            self.say(f"input is not JSON ({exc}): ignored")
            return {}
        if not isinstance(payload, dict):
            self.say("input is not a JSON object: ignored")
            return {}
        self.payload = payload
        return payload

    def text(self, *keys: str) -> str:
        """A string field of the payload (nested keys), '' when absent or not a string."""
        value: Any = self.payload
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return value if isinstance(value, str) else ""


def answer(run: Run, body: Callable[[Run], dict[str, Any] | None],
           on_crash: Callable[[Run, str], dict[str, Any] | None] | None = None,
           read: bool = False) -> dict[str, Any] | None:
    """The hook's output for `run` (None: say nothing). Never raises: anything unexpected is
    explained and handed to `on_crash` (the guard's failure policy), else silence. `read`:
    the command path, whose payload is read from stdin inside the same guard."""
    try:
        if read:
            run.read()
        out = body(run)
    except Exception as exc:  # noqa: BLE001 - a hook must never break the user's turn
        run.say(f"error: {type(exc).__name__}: {exc}")
        out = on_crash(run, f"{type(exc).__name__}: {exc}") if on_crash else None
    run.say("done" + ("" if out else " (no output)"))
    return out or None


def dumps(out: dict[str, Any]) -> str:
    """The hook output as Claude Code reads it (one compact JSON line)."""
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def main(name: str, body: Callable[[Run], dict[str, Any] | None],
         on_crash: Callable[[Run, str], dict[str, Any] | None] | None = None) -> int:
    """Run a hook as a command: read stdin, call `body`, print its JSON (if any). Always exit 0."""
    run = Run(name, sys.argv[1:])
    out = answer(run, body, on_crash, read=True)
    if out:
        sys.stdout.write(dumps(out) + "\n")
        sys.stdout.flush()
    return 0


# -- asking the warm daemon ------------------------------------------------------------------

class NoAnswer(Exception):
    """The engine could not answer (no daemon, down, timed out, error): the hook's failure path."""


def daemon(run: Run) -> client.Daemon:
    """The running daemon of this user's settings; hooks never start one (SessionStart does,
    in the background) and never answer in-process: that would cost seconds."""
    found, same = client.locate(client.peek())
    if found is None:
        raise NoAnswer("no daemon is running (start it: system1 daemon start)")
    if not same:
        raise NoAnswer("the running daemon has other settings (system1 daemon restart)")
    return found


def judge(run: Run, state: str, questions: dict[str, Any], budget_s: float) -> dict[str, Any]:
    """The daemon's judge result, answered within `budget_s` (connect included); NoAnswer else."""
    if budget_s < 0.05:
        raise NoAnswer(f"no budget left ({budget_s * 1000:.0f} ms)")
    found = daemon(run)
    # min_confidence 0: every answer comes back with its confidence, and the hook applies its
    # own threshold ([routing] / [guard] min_confidence), logging what it saw either way.
    payload = {"state": state, "questions": questions, "deadline_s": max(budget_s - MARGIN_S, 0.01),
               "min_confidence": 0.0}
    t0 = time.perf_counter()
    try:
        result = found.post("/v1/judge", payload, timeout_s=budget_s)
    except client.DaemonUnavailable as exc:
        raise NoAnswer(f"daemon did not answer: {exc}") from None
    run.say(f"judge {', '.join(questions)}: {(time.perf_counter() - t0) * 1000:.1f} ms, "
            f"{result.get('status')} by {result.get('provider')} ({result.get('model')})")
    if result.get("status") != "answered" or not isinstance(result.get("answers"), dict):
        error = e if isinstance(e := result.get("error"), dict) else {}
        raise NoAnswer(f"engine error {error.get('code')}: {error.get('message')}")
    return result


def yes_no(answer: Any) -> tuple[bool, float] | None:
    """(the yes/no answer, its confidence) of one noul answer; None when it abstained or is
    not a usable noul answer."""
    if not isinstance(answer, dict) or answer.get("abstained") or answer.get("type") != "noul":
        return None
    p_true, confidence = answer.get("p_true"), answer.get("confidence")
    if not isinstance(p_true, (int, float)) or not isinstance(confidence, (int, float)):
        return None
    return p_true >= 0.5, float(confidence)


def fitted_bar(answer: Any) -> float | None:
    """The threshold `system1 calibrate` fitted for this question, when one applied."""
    fit = answer.get("calibration") if isinstance(answer, dict) else None
    bar = fit.get("threshold") if isinstance(fit, dict) else None
    return float(bar) if isinstance(bar, (int, float)) and 0 <= bar <= 1 else None


def routing_features(run: Run, text: str, budget_s: float) -> dict[str, tuple[bool, float]]:
    """The four routing built-ins of `text` in one request: {feature: (yes, confidence)}.
    Fitted thresholds go to `run.bars` ({feature: bar}). Raises NoAnswer when the engine
    fails or abstains on any of them."""
    questions = {name: {"builtin": name} for name in ROUTING_FEATURES}
    result = judge(run, text, questions, budget_s)
    features = {}
    for name in ROUTING_FEATURES:
        answer = yes_no(result["answers"].get(name))
        if answer is None:
            raise NoAnswer(f"the engine abstained on {name}")
        features[name] = answer
        bar = fitted_bar(result["answers"].get(name))
        if bar is not None:
            run.bars[name] = bar
    return features


def unsure(run: Run, features: dict[str, tuple[bool, float]]) -> dict[str, float]:
    """{feature: its bar} of each feature below the routing threshold: the bar `system1
    calibrate` fitted for it, else `[routing] min_confidence`."""
    floor = run.settings["routing"]["min_confidence"]
    bars = {name: run.bars.get(name, floor) for name in features}
    return {name: bars[name] for name, (_, conf) in features.items() if conf < bars[name]}


# -- when to stay out of the way ---------------------------------------------------------------

HAND_BACKS = ("<task-notification", "<agent-message")
# UserPromptSubmit `source` (Claude Code ≥ 2.1.3xx; payloads may omit it): who wrote the prompt.
# Every other value (system: task notifications, peer messages, auto-continuation; loop and
# schedule wake-ups; poll events) is machine-injected.
TYPED_SOURCES = ("user", "sdk")


def skip_reason(run: Run, prompt: str, min_words: int) -> str | None:
    """Why this prompt is not judged at all (None: judge it). The payload's `source` says who
    wrote it; without one, the hand-back prefixes are the guess."""
    if toggle.paused():
        return "paused (system1 toggle on resumes)"
    source = run.payload.get("source") or None  # "" reads as absent, as on the served path
    if source is not None and source not in TYPED_SOURCES:
        shown = source if isinstance(source, str) and source.isprintable() and len(source) <= 40 else "?"
        return f"machine-injected prompt (source={shown})"
    stripped = prompt.lstrip()
    if not stripped:
        return "empty prompt"
    if stripped.startswith("/"):
        return "slash command"
    if source is None and stripped.startswith(HAND_BACKS):
        return "subagent hand-back"
    if len(stripped.split()) < min_words:
        return f"under {min_words} words"
    return None


# -- the local log -----------------------------------------------------------------------------

def repo_of(cwd: str) -> str:
    """The git work tree holding `cwd` (the nearest parent with a .git), else `cwd` itself."""
    path = os.path.abspath(cwd or os.getcwd())
    probe = path
    while True:
        if os.path.exists(os.path.join(probe, ".git")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            return path
        probe = parent


def logs_here(run: Run, cwd: str) -> bool:
    """Is the log on for this directory? (`[routing] log_dirs`: the repository or a parent)."""
    path = os.path.abspath(cwd or os.getcwd())
    for root in run.settings["routing"]["log_dirs"]:
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            return True
    return False


def append_log(run: Run, record: dict[str, Any]) -> None:
    """Append one record to the routing log (routing/log.py)."""
    run.say(f"logged {record.get('source')} entry to {routing_log.append(record)}")


def base_record(run: Run, source: str) -> dict[str, Any]:
    cwd = run.text("cwd") or os.getcwd()
    return routing_log.record(source, run.text("session_id"), run.text("prompt_id"), repo_of(cwd), cwd)


def feature_record(features: dict[str, tuple[bool, float]]) -> dict[str, Any]:
    return routing_log.features(features)
