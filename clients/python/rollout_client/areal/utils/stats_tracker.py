"""Workflow statistics, as AReaL's ``areal.utils.stats_tracker``, kept in this process.

Workflows record with ``stats_tracker.get(workflow_context.stat_scope()).scalar(reward=r)``. As in
AReaL:

* ``get(name)`` returns the tracker of that name, created on first use; its keys are prefixed
  with ``name/`` (and with the names of open :meth:`StatsTracker.scope` blocks);
* ``scalar(**values)`` appends ``float(value)`` to the key's list: a key recorded n times keeps
  n values, and :meth:`StatsTracker.export` reports their mean as ``key`` and n as
  ``key__count`` (0.0 and 0 for a key with no values);
* ``record_timing(key)`` appends elapsed seconds under ``timeperf/key``, outside any scope.

What differs: there is no ``torch.distributed`` reduction (``reduce_group`` must be None), and
the trainer-side tensor statistics ``denominator`` and ``stat`` raise
:class:`TensorStatsUnsupportedError`. The runtime takes what was recorded with :func:`drain`
(raw values per scope, then cleared) and :func:`reset` forgets all values. Inside a worker, each
episode's task calls :func:`capture` first, so what its code records goes to that episode alone,
not to whichever episode of the same process ends next (values recorded from other threads, e.g. a
reward run by ``AsyncRewardWrapper``, still go to the process-wide trackers, taken by :func:`drain`).
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional

__all__ = [
    "StatsTracker",
    "capture",
    "TensorStatsUnsupportedError",
    "denominator",
    "drain",
    "export",
    "export_all",
    "get",
    "record_timing",
    "reset",
    "scalar",
    "scope",
    "scope_func_wrapper",
    "stat",
]


class TensorStatsUnsupportedError(NotImplementedError):
    """``denominator``/``stat`` (masked tensor statistics of AReaL's trainer) were called in a workflow."""


def _no_group(reduce_group: Any) -> None:
    if reduce_group is not None:
        raise ValueError("reduce_group must be None: statistics are not reduced across processes here")


# The values of the episode whose task (or a task it started) is running: {tracker: {key: [values]}}.
_captured: contextvars.ContextVar[Optional[Dict[str, Dict[str, List[float]]]]] = contextvars.ContextVar(
    "rollout_episode_stats", default=None
)


def capture() -> Dict[str, Dict[str, List[float]]]:
    """From now on, in this context (an episode's task and the tasks it starts), recorded values go
    to the returned dict, ``{scope: {key: [values...]}}`` as :func:`drain` gives them, instead of
    the process-wide trackers."""
    values: Dict[str, Dict[str, List[float]]] = {}
    _captured.set(values)
    return values


class StatsTracker:
    """Scalar statistics under a name prefix; every method is thread-safe."""

    def __init__(self, name: str = "") -> None:
        self.name = name.strip("/")
        self.lock = threading.Lock()
        self.scope_stack: List[str] = [self.name] if self.name else []
        self.stats: Dict[str, List[float]] = defaultdict(list)

    class Scope:
        """A block during which keys get ``name/`` after the enclosing prefixes."""

        def __init__(self, tracker: "StatsTracker", name: str) -> None:
            self.tracker = tracker
            self.name = name.strip("/")

        def __enter__(self) -> "StatsTracker.Scope":
            self.tracker.scope_stack.append(self.name)
            return self

        def __exit__(self, *exc: Any) -> None:
            self.tracker.scope_stack.pop()

    def scope(self, name: str) -> "StatsTracker.Scope":
        """``with tracker.scope("x"):`` records ``key`` as ``.../x/key``. The stack is the
        tracker's (shared by all tasks), as in AReaL."""
        return self.Scope(self, name)

    def scope_func_wrapper(self, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """A decorator running the (synchronous) function inside :meth:`scope` ``(name)``."""

        def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                with self.scope(name):
                    return func(*args, **kwargs)

            return wrapper

        return decorator

    def _full_key(self, key: str) -> str:
        return "/".join(self.scope_stack + [key]) if self.scope_stack else key

    @contextmanager
    def disable_scope(self) -> Iterator[None]:
        """Record without any prefix, the tracker's name included, inside the block."""
        saved, self.scope_stack = self.scope_stack, []
        try:
            yield
        finally:
            self.scope_stack = saved

    @contextmanager
    def record_timing(self, key: str) -> Iterator[None]:
        """Append the block's wall time in seconds to ``timeperf/key`` (also when it raises)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            with self.lock:
                self._append(f"timeperf/{key}", elapsed)

    def _append(self, full_key: str, value: float) -> None:
        """One value, to the running episode's capture when there is one (call under the lock)."""
        captured = _captured.get()
        if captured is None:
            self.stats[full_key].append(value)
            return
        prefix = self.name + "/" if self.name else ""
        key = full_key[len(prefix):] if prefix and full_key.startswith(prefix) else full_key
        captured.setdefault(self.name, {}).setdefault(key, []).append(value)

    def scalar(self, *, reduce_group: Any = None, **kwargs: Any) -> None:
        """Append ``float(value)`` to each key's values. A value ``float()`` refuses raises its
        ``TypeError``/``ValueError`` and nothing of this call is recorded."""
        _no_group(reduce_group)
        values = {key: float(value) for key, value in kwargs.items()}
        with self.lock:
            for key, value in values.items():
                self._append(self._full_key(key), value)

    def denominator(self, *, reduce_group: Any = None, **kwargs: Any) -> None:
        """Not available in a workflow: raises :class:`TensorStatsUnsupportedError`."""
        raise TensorStatsUnsupportedError("stats_tracker.denominator is a trainer statistic; workflows record scalar()")

    def stat(self, denominator: str, reduce_type: Any = None, *, reduce_group: Any = None, **kwargs: Any) -> None:
        """Not available in a workflow: raises :class:`TensorStatsUnsupportedError`."""
        raise TensorStatsUnsupportedError("stats_tracker.stat is a trainer statistic; workflows record scalar()")

    def export(self, key: Optional[str] = None, reduce_group: Any = None, reset: bool = True) -> Dict[str, float]:
        """``{full_key: mean, full_key + "__count": n}`` for every key (or only ``key``, taken
        relative to the current scope), then forgets them when ``reset``."""
        _no_group(reduce_group)
        with self.lock:
            keys = [self._full_key(key)] if key is not None else list(self.stats)
            out: Dict[str, float] = {}
            for k in keys:
                values = self.stats.get(k, [])
                out[k] = sum(values) / len(values) if values else 0.0
                out[k + "__count"] = len(values)
                if reset:
                    self.stats.pop(k, None)
            return out

    def drain(self) -> Dict[str, List[float]]:
        """Every key's raw values in recording order, keys without the tracker's own name prefix;
        then forgets them."""
        prefix = self.name + "/" if self.name else ""
        with self.lock:
            taken, self.stats = self.stats, defaultdict(list)
        return {(k[len(prefix):] if prefix and k.startswith(prefix) else k): v for k, v in taken.items()}


_trackers: Dict[str, StatsTracker] = {}
_trackers_lock = threading.Lock()


def get(name: str = "") -> StatsTracker:
    """The tracker ``name`` of this process (``""``: the default one, no prefix)."""
    with _trackers_lock:
        tracker = _trackers.get(name)
        if tracker is None:
            tracker = _trackers[name] = StatsTracker(name)
        return tracker


def export_all(reduce_group: Any = None, reset: bool = True) -> Dict[str, float]:
    """:meth:`StatsTracker.export` of every tracker, merged into one dict."""
    with _trackers_lock:
        trackers = list(_trackers.values())
    out: Dict[str, float] = {}
    for tracker in trackers:
        out.update(tracker.export(reduce_group=reduce_group, reset=reset))
    return out


def drain() -> Dict[str, Dict[str, List[float]]]:
    """What every tracker recorded since the last drain, ``{scope: {key: [values...]}}``, keys
    relative to the scope (``get("rollout").scalar(reward=1)`` → ``{"rollout": {"reward": [1.0]}}``);
    scopes with nothing recorded are left out. The recorded values are cleared; the trackers stay."""
    with _trackers_lock:
        trackers = list(_trackers.items())
    out: Dict[str, Dict[str, List[float]]] = {}
    for name, tracker in trackers:
        values = tracker.drain()
        if values:
            out[name] = values
    return out


def reset() -> None:
    """Forget every value recorded and every open scope (a process reused for another run,
    tests). The tracker objects stay, so one a workflow keeps goes on recording."""
    with _trackers_lock:
        trackers = list(_trackers.values())
    for tracker in trackers:
        with tracker.lock:
            tracker.stats = defaultdict(list)
            tracker.scope_stack = [tracker.name] if tracker.name else []


def scalar(**kwargs: Any) -> None:
    """``get().scalar(**kwargs)``: the default tracker."""
    get().scalar(**kwargs)


def scope(name: str) -> StatsTracker.Scope:
    """``get().scope(name)``."""
    return get().scope(name)


def record_timing(key: str) -> Any:
    """``get().record_timing(key)``."""
    return get().record_timing(key)


def scope_func_wrapper(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``get().scope_func_wrapper(name)``."""
    return get().scope_func_wrapper(name)


def export(key: Optional[str] = None, reduce_group: Any = None, reset: bool = True) -> Dict[str, float]:
    """``get().export(...)``: the default tracker."""
    return get().export(key=key, reduce_group=reduce_group, reset=reset)


def denominator(**kwargs: Any) -> None:
    """Raises :class:`TensorStatsUnsupportedError`."""
    get().denominator(**kwargs)


def stat(denominator: str, reduce_type: Any = None, **kwargs: Any) -> None:
    """Raises :class:`TensorStatsUnsupportedError`."""
    get().stat(denominator, reduce_type, **kwargs)
