"""The session-tracing decorators AReaL's RLVR workflow uses, as no-ops.

AReaL's ``areal.utils.perf_tracer`` records per-session phase timings to its own trace files.
Here the decorators and context managers keep their signatures and do nothing but run the code,
so a workflow that uses them ports unchanged; the engine measures generation itself
(docs/observability.md).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from typing import Any, AsyncIterator, Callable, Dict, Iterator, Optional

__all__ = ["atrace_session_phase", "session_context", "trace_session", "trace_session_phase"]


@contextlib.contextmanager
def trace_session_phase(
    phase: str, *, start_payload: Optional[Dict[str, Any]] = None, end_payload: Optional[Dict[str, Any]] = None
) -> Iterator[None]:
    """Runs the block; records nothing."""
    yield


@contextlib.asynccontextmanager
async def atrace_session_phase(
    phase: str, *, start_payload: Optional[Dict[str, Any]] = None, end_payload: Optional[Dict[str, Any]] = None
) -> AsyncIterator[None]:
    """Runs the block; records nothing."""
    yield


def _passthrough(func: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            return await func(*args, **kwargs)

        return async_wrapper

    @functools.wraps(func)
    def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return sync_wrapper


def session_context() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator (sync or async functions) that calls the function unchanged."""
    return _passthrough


def trace_session(phase: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator (sync or async functions) that calls the function unchanged."""
    return _passthrough
