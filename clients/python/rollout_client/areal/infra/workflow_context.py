"""The context of the episode being run, as AReaL's ``areal.infra.workflow_context``.

The context lives in a ``contextvars.ContextVar``: an asyncio task starts with a copy of its
creator's context, so a runtime that sets it at the start of each episode's task gives every
concurrent episode its own. Outside any task that set it, the default (training, no task) holds.
AReaL's shared HTTP clients (``get_aiohttp_session``/``get_httpx_client``) are not provided: a
workflow generates through ``engine.agenerate``.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterator, Optional

__all__ = ["WorkflowContext", "get", "set", "stat_scope", "use"]

#: The stats_tracker scopes, named as the engine names them in stats.jsonl and /v1/stats.
TRAIN_SCOPE = "rollout"
EVAL_SCOPE = "eval-rollout"


@dataclass(frozen=True)
class WorkflowContext:
    """``is_eval``: an evaluation episode; ``task_id``: the engine's task; ``sample_idx``: the
    slot within its group (stable, not the order of completion); None when not known."""

    is_eval: bool = False
    task_id: Optional[int] = None
    sample_idx: Optional[int] = None


_current: ContextVar[WorkflowContext] = ContextVar("workflow_context", default=WorkflowContext())


def set(ctx: WorkflowContext) -> None:  # noqa: A001 - AReaL's name
    """Make ``ctx`` the context of the current task (or thread) from now on."""
    _current.set(ctx)


def get() -> WorkflowContext:
    """The current context (``WorkflowContext()`` when none was set)."""
    return _current.get()


def stat_scope() -> str:
    """``"eval-rollout"`` in an evaluation episode, else ``"rollout"``."""
    return EVAL_SCOPE if get().is_eval else TRAIN_SCOPE


@contextlib.contextmanager
def use(ctx: WorkflowContext) -> Iterator[WorkflowContext]:
    """Set ``ctx`` for the block and restore the previous context after it (for a runtime that
    runs several episodes in one task, and for tests)."""
    token = _current.set(ctx)
    try:
        yield ctx
    finally:
        _current.reset(token)
