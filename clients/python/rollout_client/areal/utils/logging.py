"""Loggers for workflow code, as AReaL's ``areal.utils.logging.getLogger``.

AReaL's version re-creates the root logger and applies its own logging config on every call; this
one leaves the process's logging configuration alone. It returns the standard library's logger of
that name and, the first time a name is asked for, gives it one stderr handler with AReaL's plain
line format and stops propagation, so a message is printed once. A worker's stderr is what the
engine logs.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Optional

__all__ = ["DATE_FORMAT", "LOG_FORMAT", "LOGLEVEL", "getLogger"]

LOG_FORMAT = "%(asctime)s.%(msecs)03d %(name)s %(levelname)s: %(message)s"
DATE_FORMAT = "%Y%m%d-%H:%M:%S"
LOGLEVEL = logging.INFO
_TYPES = ("plain", "benchmark", "colored", "system")

_configured: set = set()
_lock = threading.Lock()


def getLogger(name: Optional[str] = None, type_: Optional[str] = None, level: int = LOGLEVEL) -> logging.Logger:
    """The logger ``name`` (``"plain"`` when None) at ``level``, writing to stderr.

    ``type_`` is one of AReaL's ``"plain"``, ``"benchmark"``, ``"colored"``, ``"system"`` (None
    means plain); all four print plain lines here. Another value raises ``ValueError``. As in
    AReaL, the level is set when a name is first configured; later calls return the same logger.
    """
    if name is None:
        name = "plain"
    if type_ is None:
        type_ = "plain"
    if type_ not in _TYPES:
        raise ValueError(f"type_ must be one of {', '.join(_TYPES)}, not {type_!r}")
    logger = logging.getLogger(name)
    with _lock:
        if name not in _configured:
            _configured.add(name)
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter(LOG_FORMAT, DATE_FORMAT))
            logger.addHandler(handler)
            logger.setLevel(level)
            logger.propagate = False
    return logger
