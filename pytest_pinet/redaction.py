"""Keep secrets (SSH passwords, database passwords) out of logs, facts and report attachments.

A lab's env file may carry a ``NetworkService`` password and the results store URL a
database password.  Reprs already hide them, but text from elsewhere (a tool's error
message, a console log, a library's debug line) can quote them verbatim.  Every secret pinet
learns is registered here; every log record created in the process and every text pinet
writes into the results or attaches to the report passes through :func:`mask`.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

MASK = "***"
MIN_LENGTH = 4  # shorter "secrets" would mask ordinary words and numbers all over the report

_lock = threading.Lock()
_secrets: set[str] = set()
_installed = False


def register(secret: str | None) -> None:
    """Remember ``secret`` so that it is masked from now on (None and "" are ignored)."""
    if not secret or len(secret) < MIN_LENGTH:
        return
    with _lock:
        _secrets.add(secret)
    _install_log_masking()


def mask(text: str) -> str:
    """``text`` with every registered secret replaced by ``***`` (longest first)."""
    with _lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def mask_data(value: Any) -> Any:
    """Mask every string inside JSON-like data (facts, measurement summaries)."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {key: mask_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [mask_data(item) for item in value]
    return value


def _install_log_masking() -> None:
    """Mask at record creation, so every handler (pytest's capture, files, consoles) and
    every logger (ours, paramiko's, labgrid's) sees the masked text."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    previous = logging.getLogRecordFactory()

    def masked_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if _secrets:
            try:
                message = record.getMessage()
            except Exception:  # noqa: BLE001 - a malformed record stays as it was; logging reports it
                return record
            masked = mask(message)
            if masked != message:
                record.msg, record.args = masked, None
        return record

    logging.setLogRecordFactory(masked_record)
