"""Honest confidence (docs/confidence.md): one temperature per (provider, model, question), applied by the
core to every engine's answer before the threshold.

Fits come from two files: `calibration.json` shipped in the package (every install starts
calibrated where we have data) and `<state>/calibration.json` written by `system1 calibrate`
(this machine's labels: it wins). A fit names the engine it was measured on — the rung name
or the provider kind, and the exact model or checkpoint — so a fit for another model is never
applied. Lookup, most specific first: the question's wording hash, then the question's option
count (a fallback fitted on every question with that many options).

Temperature scaling divides the log-probabilities by T and renormalises: it cools an
over-confident engine (T > 1) or warms an under-confident one (T < 1) and never changes which
answer wins. A fit may also carry a threshold chosen for a target accuracy; it replaces the
configured `min_confidence` for that question unless the request sets its own.

The user file is re-read when it changes (checked at most once a second), so `calibrate
--apply` takes effect in a running daemon without a restart. A broken file is reported
(`status`, the log) and ignored; it never breaks answering.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .. import bounded_json
from ..logs import LOGGER
from ..paths import state_file

log = logging.getLogger(LOGGER)

FORMAT: Final = 1
MIN_LABELS = 50  # below this a temperature is noise; calibrate refuses to fit
FIRM_LABELS = 200  # below this a fit is marked provisional
SHIPPED_PATH = Path(__file__).with_name("calibration.json")
RECHECK_S = 1.0
LOG_FLOOR = 1e-12


class FitRecord(BaseModel):
    """One fitted temperature, as stored in a calibration file."""

    model_config = ConfigDict(extra="forbid")
    provider: str = Field(min_length=1, max_length=200, description="rung name, or provider kind")
    model: str = Field(min_length=1, max_length=400, description="exact model / checkpoint it was fitted on")
    question: str | None = Field(default=None, pattern=r"^[0-9a-f]{16}$", description="question wording hash")
    options: int | None = Field(default=None, ge=2, le=1000, description="option-count fallback")
    temperature: float = Field(gt=0.01, lt=100)
    n: int = Field(ge=MIN_LABELS, description="labels the fit was measured on")
    threshold: float | None = Field(default=None, ge=0, le=1)
    target_accuracy: float | None = Field(default=None, ge=0, le=1)
    accuracy_lower: float | None = Field(default=None, ge=0, le=1, description="bootstrap 5 % bound at threshold")
    coverage: float | None = Field(default=None, ge=0, le=1)
    name: str | None = Field(default=None, max_length=200, description="a readable name (built-in id, task)")
    fitted_at: str | None = Field(default=None, max_length=40)

    @model_validator(mode="after")
    def _one_scope(self) -> "FitRecord":
        if (self.question is None) == (self.options is None):
            raise ValueError("a fit names exactly one of `question` (a wording hash) or `options` (a count)")
        return self

    @property
    def scope(self) -> str:
        return "question" if self.question else "options"

    def key(self) -> tuple[str, str, str]:
        return self.provider, self.model, f"q:{self.question}" if self.question else f"o:{self.options}"


class CalibrationFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: Literal[1] = FORMAT
    fits: list[FitRecord] = Field(default_factory=list)


@dataclass(frozen=True)
class Fit:
    record: FitRecord
    source: str  # "user" | "shipped"

    @property
    def temperature(self) -> float:
        return self.record.temperature

    @property
    def threshold(self) -> float | None:
        return self.record.threshold

    def info(self) -> dict[str, Any]:
        """What an answer says about the fit that applied to it."""
        r = self.record
        return {"source": self.source, "scope": r.scope, "temperature": round(r.temperature, 4), "n": r.n,
                "provisional": r.n < FIRM_LABELS, "threshold": r.threshold}


def scale(probs: dict[str, float], temperature: float) -> dict[str, float]:
    """softmax(log p / T): the same order of labels, sharper (T < 1) or flatter (T > 1)."""
    if temperature == 1.0:
        return dict(probs)
    logs = {k: math.log(max(p, LOG_FLOOR)) / temperature for k, p in probs.items()}
    top = max(logs.values())
    exps = {k: math.exp(v - top) for k, v in logs.items()}
    total = sum(exps.values())
    return {k: v / total for k, v in exps.items()}


def read_file(path: Path) -> CalibrationFile:
    """A calibration file, checked; ValueError naming the file and the field otherwise."""
    try:
        raw = bounded_json.file_loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON: {exc}") from None
    try:
        return CalibrationFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ValueError(f"{path}: {where}: {first['msg']}") from None


def user_path() -> Path:
    return Path(state_file("calibration.json"))


class Calibration:
    """The fits in force. `find` is called once per answer: a dict lookup, plus one stat of
    the user file per second."""

    def __init__(self, user: Path | None = None, shipped: Path | None = SHIPPED_PATH, enabled: bool = True):
        self.enabled = enabled
        self._user_path = user
        self._shipped = self._load(shipped, "shipped") if shipped and enabled else {}
        self._user: dict[tuple[str, str, str], Fit] = {}
        self._user_stamp: tuple[int, int] | None = None
        self._checked = 0.0
        self._lock = threading.Lock()
        self.errors: dict[str, str] = {}

    @classmethod
    def off(cls) -> "Calibration":
        """Raw engine answers: what `calibrate` and `evaluate` fit and score."""
        return cls(enabled=False)

    def _load(self, path: Path, source: str) -> dict[tuple[str, str, str], Fit]:
        try:
            parsed = read_file(path)
        except ValueError as exc:
            if source == "shipped" or path.exists():
                self.errors = {**getattr(self, "errors", {}), source: str(exc)}
                log.warning("calibration ignored: %s", exc)
            return {}
        if hasattr(self, "errors"):
            self.errors.pop(source, None)
        return {f.key(): Fit(f, source) for f in parsed.fits}

    def _refresh(self) -> None:
        now = time.monotonic()
        if now - self._checked < RECHECK_S:
            return
        with self._lock:
            if now - self._checked < RECHECK_S:
                return
            self._checked = now
            path = self._user_path or user_path()
            try:
                st = os.stat(path)
                stamp = (st.st_mtime_ns, st.st_size)
            except OSError:
                stamp = None
            if stamp != self._user_stamp:
                self._user = self._load(path, "user") if stamp else {}
                if not stamp:
                    self.errors.pop("user", None)
                self._user_stamp = stamp

    def find(self, names: tuple[str, ...], model: str, question: str, options: int) -> Fit | None:
        """The fit for this engine (`names`: the rung name, then its provider kind), model and
        question; the user's fits first, the question before its option count."""
        if not self.enabled:
            return None
        self._refresh()
        for table in (self._user, self._shipped):
            if not table:
                continue
            for scope in (f"q:{question}", f"o:{options}"):
                for name in names:
                    fit = table.get((name, model, scope))
                    if fit is not None:
                        return fit
        return None

    def summary(self) -> dict[str, Any]:
        """For `status`: how many fits are in force and any file that was refused."""
        if self.enabled:
            self._refresh()
        return {"enabled": self.enabled, "user_fits": len(self._user), "shipped_fits": len(self._shipped),
                "user_file": str(self._user_path or user_path()), "errors": dict(self.errors)}
