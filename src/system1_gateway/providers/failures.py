"""The one HTTP-status-to-failure classifier, shared by every HTTP provider (systemone and its
dialects, openai). It decides what a failure means for *this rung*:

  3xx                                  → endpoint: the URL is not the API (a redirect is never
                                         followed: it may go to a login page or http→https)
  401 / 403                            → credentials          (cools 300 s)
  402, or 400/403/429 speaking of credits, quota, balance or billing → quota (300 s)
  404 naming a model                   → model                (300 s)
  404 / 405 otherwise                  → endpoint: no such route here — a wrong path, or a
                                         server without /v1/systemone (300 s)
  408                                  → timeout              (no cooling)
  429                                  → rate_limit           (30 s or Retry-After)
  503 / 529                            → overload             (30 s or Retry-After)
  other 5xx                            → server               (30 s or Retry-After)
  any other 4xx                        → rejected: the engine says this very request is at
                                         fault; another engine would not do better with the
                                         same validated input, so it does not advance.

Every class but `rejected` advances the waterfall. The engine's text is cut to 300
characters; ProviderFailure scrubs anything that looks like a key.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from typing import Any, Mapping

from ..model.errors import MalformedAnswer, ProviderFailure, ProviderTimeout, scrub

QUOTA_WORDS = re.compile(r"credit|quota|balance|billing|insufficient[_ ]funds|payment required", re.I)
MODEL_WORDS = re.compile(r"\bmodel|checkpoint", re.I)
MAX_ENGINE_TEXT = 300


def error_message(body: Any) -> str | None:
    """The official Jev SDK's extraction order: error (str), error.message, message, detail
    (str), detail.message, detail[*].msg."""
    if not isinstance(body, dict):
        return None
    err = body.get("error")
    if isinstance(err, str):
        return err
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        return err["message"]
    if isinstance(body.get("message"), str):
        return body["message"]
    detail = body.get("detail")
    if isinstance(detail, str):
        return detail
    if isinstance(detail, dict) and isinstance(detail.get("message"), str):
        return detail["message"]
    if isinstance(detail, list):
        msgs = [f"{'.'.join(map(str, d.get('loc', []) if isinstance(d.get('loc'), list) else []))}: {d.get('msg')}"
                for d in detail if isinstance(d, dict)]
        return "; ".join(msgs) or None
    return None


def retry_after(headers: Mapping[str, str]) -> float | None:
    """`retry-after-ms` first, then `retry-after` (seconds or an HTTP date); anything
    unreadable is ignored (the default cooldown applies), never an error."""
    ms = _seconds(headers.get("retry-after-ms"))
    if ms is not None:
        return ms / 1000
    value = headers.get("retry-after")
    if not value:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    try:
        return max(0.0, when.timestamp() - time.time())
    except (OverflowError, OSError, ValueError):
        return None


def _seconds(value: str | None) -> float | None:
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def classify(name: str, status: int, message: str | None, headers: Mapping[str, str],
             code: str | None = None, secrets: tuple[str | None, ...] = ()) -> ProviderFailure:
    """The failure a non-200 answer means for rung `name` (see the table above). `secrets`
    (the rung's own key) are removed from the engine's text, should it echo them."""
    text = scrub(message or "", tuple(s for s in secrets if s))[:MAX_ENGINE_TEXT]
    detail = f"{name}: HTTP {status}" + (f": {text}" if text else "")
    wait = retry_after(headers)
    if 300 <= status < 400:
        where = headers.get("location")
        return ProviderFailure(f"{detail} (redirected{' to ' + where[:200] if where else ''}; "
                               f"set the endpoint to the final URL)", kind="endpoint")
    quota_words = bool(QUOTA_WORDS.search(text))
    if status in (401, 403) and not quota_words:
        return ProviderFailure(detail, kind="credentials")
    if status == 402 or code == "insufficient_quota" or (status in (400, 401, 403, 429) and quota_words):
        return ProviderFailure(detail, kind="quota")
    if status == 404 and (MODEL_WORDS.search(text) or code == "model_not_found"):
        return ProviderFailure(detail, kind="model")
    if status in (404, 405):
        return ProviderFailure(f"{detail} (no such route: is the endpoint right?)", kind="endpoint")
    if status == 408:
        return ProviderTimeout(detail)
    if status == 429:
        return ProviderFailure(detail, kind="rate_limit", retry_after_s=wait)
    if status in (503, 529):
        return ProviderFailure(detail, kind="overload", retry_after_s=wait)
    if status >= 500 or status < 200:
        return ProviderFailure(detail, kind="server", retry_after_s=wait)
    if 200 <= status < 300:  # a success code other than 200 where 200 is the contract
        return MalformedAnswer(f"{detail} (expected 200)")
    return ProviderFailure(detail, kind="rejected", advance=False)
