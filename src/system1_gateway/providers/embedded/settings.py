"""The embedded engine's settings (`[providers.<name>]` of kind `embedded`), its models' names,
and how many CPUs it may use."""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import Field, model_validator

from ..base import RungSettings

LLM_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"
FAST_MODEL = "all-minilm-l6-v2-int8"


class EmbeddedSettings(RungSettings):
    tier: Literal["auto", "llm", "fast"] = "auto"
    threads: int | None = Field(default=None, ge=1, le=256, description="default: usable CPUs")
    kv_slots: int = Field(default=16, ge=1, le=64, description="recurring questions kept in the KV cache")
    n_ctx: int = Field(default=8192, ge=512, le=32768)
    prior: bool = Field(default=True, description="label-free bias correction from the question's own definitions")
    fast_weight: float = Field(default=0.3, ge=0, le=1, description="weight of the fast tier in the llm+fast blend")
    fast_accept: float = Field(default=0.9, gt=0, le=1.01, description="fast answers alone at or above this (>1: never)")
    heads: bool = Field(default=True, description="answer built-in and taught questions with their learned heads")

    @model_validator(mode="before")
    @classmethod
    def _removed(cls, data: Any) -> Any:
        stale = sorted({"prior_k", "prior_min"} & set(data)) if isinstance(data, dict) else []
        if stale:
            raise ValueError(f"{', '.join(stale)}: removed in 0.3.0 (the running prior they tuned was replaced "
                             "by a per-question reference with no such constants); delete the line")
        return data


def usable_cpus() -> int:
    """CPUs this process may run on (affinity and cgroup quota), not the machine's count."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        n = os.cpu_count() or 1
    try:
        quota, period = open("/sys/fs/cgroup/cpu.max").read().split()  # noqa: SIM115 - one read of a cgroup file
        if quota != "max":
            n = min(n, max(1, int(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, n)
