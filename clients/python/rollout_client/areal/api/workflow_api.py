"""The workflow base class, as AReaL's ``areal.api.workflow_api``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Dict, Union

if TYPE_CHECKING:  # pragma: no cover
    from ..experimental.openai.types import InteractionWithTokenLogpReward
    from .engine_api import InferenceEngine

__all__ = ["RolloutWorkflow"]


class RolloutWorkflow(ABC):
    """One episode per call: build a prompt from ``data``, generate through ``engine``, score.

    A subclass implements :meth:`arun_episode`; the runtime calls it once per slot of a group, in
    an asyncio task whose :mod:`workflow_context <rollout_client.areal.infra.workflow_context>` is set.
    """

    @abstractmethod
    async def arun_episode(
        self, engine: "InferenceEngine", data: Dict[str, Any]
    ) -> Union[Dict[str, Any], None, Dict[str, "InteractionWithTokenLogpReward"]]:
        """Run one episode on the data item ``data``.

        Returns a dict of batch-first tensors (``input_ids``, ``attention_mask``, ``loss_mask``,
        ``logprobs``, ``versions``, ``rewards``, ...), or ``None`` to reject the episode (it is not
        trained on), or a dict of :class:`InteractionWithTokenLogpReward` keyed by interaction id.
        """
        raise NotImplementedError()
