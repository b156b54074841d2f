"""A synchronous reward function awaited with a timeout and retries, as AReaL's ``AsyncRewardWrapper``.

The rules are AReaL's (``areal/api/reward_api.py``): ``max_retries + 1`` attempts, each limited to
``timeout_seconds``;

* an attempt that times out is retried; when it was the last attempt the call returns ``0``
  (the int, as AReaL) instead of raising;
* an attempt that raises is retried; when it was the last attempt its exception propagates;
* executors are shared by all wrappers with the same ``max_workers``.

Where it differs: AReaL runs the function in a ``ProcessPoolExecutor``; here it runs in a
``ThreadPoolExecutor``. So the function and its arguments need not be picklable, a CPU-bound
function holds the GIL while it runs (the worker processes the engine starts give parallelism
across processes), and there is no broken-pool recovery because a thread pool cannot break. In
both, a timed-out attempt is abandoned, not stopped: it keeps its pool worker until it returns.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, ClassVar, Dict, Optional

from ..utils import logging

__all__ = ["AsyncRewardWrapper", "RewardExecutorShutDownError", "default_max_workers"]

logger = logging.getLogger("RewardAPI")


class RewardExecutorShutDownError(RuntimeError):
    """The wrapper's shared executor was shut down (:meth:`AsyncRewardWrapper.shutdown_all`)."""


def _device_count() -> int:
    """GPUs as ``/dev/nvidia<N>`` or ``/dev/davinci<N>`` files; 8 when there is no such file
    or ``/dev`` cannot be read (AReaL's cautious fallback)."""
    try:
        entries = os.listdir("/dev")
    except OSError:
        return 8
    for prefix in ("nvidia", "davinci"):
        n = sum(1 for e in entries if e.startswith(prefix) and e[len(prefix):].isdigit())
        if n:
            return n
    return 8


def default_max_workers() -> int:
    """AReaL's default pool size: ``max((cpu_count // device_count) // 2, 1)``."""
    return max(((os.cpu_count() or 1) // _device_count()) // 2, 1)


class AsyncRewardWrapper:
    """``await wrapper(*args, **kwargs)`` runs ``reward_fn(*args, **kwargs)`` in a shared thread
    pool with the timeout and retry rules of the module docstring.

    ``max_workers`` defaults to :func:`default_max_workers`.
    """

    _executors: ClassVar[Dict[int, ThreadPoolExecutor]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        reward_fn: Callable[..., Any],
        timeout_seconds: float = 15,
        max_workers: Optional[int] = None,
        max_retries: int = 3,
    ) -> None:
        self.reward_fn = reward_fn
        self.timeout_seconds = timeout_seconds
        if max_workers is None:
            max_workers = default_max_workers()
        self.max_workers = max_workers
        self.max_retries = max_retries
        self._executor_key = max_workers
        with self._lock:
            if self._executor_key not in self._executors:
                self._executors[self._executor_key] = ThreadPoolExecutor(
                    max_workers=max_workers, thread_name_prefix=f"reward-{max_workers}"
                )

    @classmethod
    def shutdown_all(cls, wait: bool = False) -> None:
        """Shut every shared executor down (queued calls are cancelled) and forget them.

        Wrappers created before keep failing with :class:`RewardExecutorShutDownError`; wrappers
        created after get new executors. For a runtime that resets the process between runs, and
        for tests.
        """
        with cls._lock:
            executors = list(cls._executors.values())
            cls._executors.clear()
        for executor in executors:
            executor.shutdown(wait=wait, cancel_futures=True)

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The function's value, ``0`` when the last attempt timed out, or the last attempt's
        exception. Cancelling the awaiting task cancels the wait (not a running function)."""
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            with self._lock:
                executor = self._executors.get(self._executor_key)
            if executor is None:
                raise RewardExecutorShutDownError("the reward executor has been shut down")
            last = attempt == self.max_retries
            try:
                future = asyncio.get_running_loop().run_in_executor(
                    executor, functools.partial(self.reward_fn, *args, **kwargs)
                )
                return await asyncio.wait_for(future, timeout=self.timeout_seconds)
            except (asyncio.TimeoutError, TimeoutError):
                logger.warning(
                    "reward timed out after %ss (attempt %d/%d); %s",
                    self.timeout_seconds, attempt + 1, attempts, "returning 0" if last else "retrying",
                )
                if last:
                    return 0
            except Exception:
                logger.exception("reward raised (attempt %d/%d)", attempt + 1, attempts)
                if last:
                    raise
        return 0
