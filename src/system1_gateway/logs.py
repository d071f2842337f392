"""Logging: stderr (never stdout, which carries results or protocol) and an optional file.

Every line carries the id of the request being served (a context variable), so one
request's lines can be found among concurrent ones.
"""

from __future__ import annotations

import contextvars
import logging

LOGGER = "system1_gateway"
request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("system1_request_id", default="-")


class _RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = printable(request_id_var.get())
        return True


def printable(text: str) -> str:
    """`text` with control and other unprintable characters escaped (`\\n`, `\\x1b`, …): a
    caller's request id must not start a forged log line or drive a terminal."""
    return text if text.isprintable() else text.encode("unicode_escape").decode("ascii")


_configured: tuple[str, str | None] | None = None


def configure(level: str = "WARNING", log_file: str | None = None) -> None:
    """(Re)install the gateway's handlers; idempotent for the same settings."""
    global _configured
    if _configured == (level, log_file):
        return
    logger = logging.getLogger(LOGGER)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    fmt = logging.Formatter("%(asctime)s %(levelname)s system1 [%(request_id)s] %(message)s")
    handlers: list[logging.Handler] = [logging.StreamHandler()]  # stderr
    if log_file:
        try:
            handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
        except OSError as exc:
            logger.warning("cannot open log_file %s: %s", log_file, exc)
    for handler in handlers:
        handler.setFormatter(fmt)
        handler.addFilter(_RequestIdFilter())
        logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    _configured = (level, log_file)
