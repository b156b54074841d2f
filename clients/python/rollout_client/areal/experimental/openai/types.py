"""One model call with its reward, as AReaL's ``areal.experimental.openai.types``.

A workflow may return ``{interaction_id: InteractionWithTokenLogpReward}``; each interaction
becomes one row through :meth:`InteractionWithTokenLogpReward.to_tensor_dict`, with AReaL's keys,
shapes and dtypes. The OpenAI objects (``completion``, ``response``) are carried as opaque objects:
nothing here imports the openai package. ``to_tensor_dict`` needs torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, List, Optional

from ...api.io_struct import ModelResponse
from ...utils import logging

__all__ = ["ApiType", "InputName", "InteractionWithTokenLogpReward", "MissingModelResponseError"]

logger = logging.getLogger("TokenLogpReward")


class ApiType(str, Enum):
    """Which OpenAI API produced the interaction."""

    COMPLETION = "completion"
    RESPONSE = "response"
    NONE = "none"


class InputName(str, Enum):
    """The name of the interaction's input, for log messages."""

    MESSAGES = "messages"
    INPUT_DATA = "input_data"
    NONE = "none"


class MissingModelResponseError(ValueError):
    """``to_tensor_dict`` was called on an interaction without ``model_response`` or cached tensors."""


@dataclass
class InteractionWithTokenLogpReward:
    """A model call (``model_response``: its tokens, log-probabilities and versions) with its
    ``reward`` and, for chained calls, its ``parent``.

    ``chat_template_type`` ``"concat"`` means the call's input extends its parent's input and
    output, so the parent's rows are reused (see :meth:`to_tensor_dict`); ``"hf"`` treats every
    call on its own.
    """

    model_response: Optional[ModelResponse] = None
    reward: Optional[float] = None
    original_reward: Optional[float] = None
    parent: Optional["InteractionWithTokenLogpReward"] = None
    chat_template_type: str = "hf"
    _cache: Optional[Dict[str, Any]] = None
    messages: List[dict] = field(default_factory=list)
    output_message_list: Optional[List[dict]] = None
    completion: Any = None
    response: Any = None
    input_data: Any = field(default_factory=lambda: "")
    _interaction_id: Optional[str] = None

    @property
    def has_tensor_data(self) -> bool:
        """Whether :meth:`to_tensor_dict` can produce a row."""
        return self.model_response is not None or self._cache is not None

    @property
    def is_completion(self) -> bool:
        return self.completion is not None

    @property
    def is_response(self) -> bool:
        return self.response is not None

    @property
    def api_type(self) -> ApiType:
        if self.is_completion:
            return ApiType.COMPLETION
        if self.is_response:
            return ApiType.RESPONSE
        return ApiType.NONE

    @property
    def input_name_for_logging(self) -> InputName:
        if self.is_completion:
            return InputName.MESSAGES
        if self.is_response:
            return InputName.INPUT_DATA
        return InputName.NONE

    @property
    def current_data(self) -> Any:
        """The call's input: ``messages`` (completion), ``input_data`` (response), else None."""
        if self.is_completion:
            return self.messages
        if self.is_response:
            return self.input_data
        return None

    @property
    def parent_data(self) -> Any:
        return None if self.parent is None else self.parent.current_data

    @property
    def interaction_id(self) -> Optional[str]:
        """The completion's or response's ``id``, else the id that was set."""
        if self.is_completion:
            return self.completion.id
        if self.is_response:
            return self.response.id
        return self._interaction_id

    @interaction_id.setter
    def interaction_id(self, value: Optional[str]) -> None:
        if self.is_completion or self.is_response:
            raise ValueError("the id of a completion or response is its own; it cannot be set")
        self._interaction_id = value

    @property
    def created_at(self) -> Optional[float]:
        if self.is_completion:
            return float(self.completion.created)
        if self.is_response:
            return float(self.response.created_at)
        return None

    @property
    def remaining_messages(self) -> List[dict]:
        """The messages after the parent's messages and output (all of them without a parent)."""
        if self.parent is None:
            return self.messages
        if self.parent.output_message_list is None:
            raise ValueError("the parent's output_message_list is not set")
        return self.messages[len(self.parent.messages) + len(self.parent.output_message_list):]

    def to_tensor_dict(self) -> Dict[str, Any]:
        """One row (batch dim 1), computed once and cached, as AReaL builds it.

        Keys: ``input_ids`` (int64), ``loss_mask`` (int64), ``logprobs`` (float32), ``versions``
        (int64), ``turn_ids`` (int32), ``attention_mask`` (bool), each ``[1, L]``; ``rewards`` and
        ``original_rewards`` (float32, ``[1]``; a missing reward is 0.0, a missing original reward
        the reward). Prompt positions have loss mask 0, log-probability 0.0, version -1 and turn
        id -1; output positions 1, their log-probabilities, versions, and the turn id.

        With ``chat_template_type == "concat"`` and a parent, the parent's rows are reused for the
        first positions and this call's output gets turn id (highest parent turn id + 1); when this
        call's input is not longer than the parent's row, the parent is ignored with a warning.
        """
        if self._cache is not None:
            return self._cache
        resp = self.model_response
        if resp is None:
            raise MissingModelResponseError("the interaction has no model_response")
        import torch

        seq = resp.input_tokens + resp.output_tokens
        logprobs = [0.0] * resp.input_len + resp.output_logprobs
        loss_mask = [0] * resp.input_len + [1] * resp.output_len
        versions = [-1] * resp.input_len + resp.output_versions
        turn_ids = [-1] * resp.input_len + [0] * resp.output_len
        if self.chat_template_type == "concat" and self.parent is not None:
            parent = self.parent.to_tensor_dict()
            p_logprobs = parent["logprobs"].squeeze(0).tolist()
            p_loss_mask = parent["loss_mask"].squeeze(0).tolist()
            p_versions = parent["versions"].squeeze(0).tolist()
            p_turn_ids = parent["turn_ids"].squeeze(0).tolist()
            p_len = len(p_logprobs)
            if resp.input_len > p_len:
                gap = resp.input_len - p_len
                own_turn = max((t for t in p_turn_ids if t >= 0), default=-1) + 1
                logprobs = p_logprobs + [0.0] * gap + resp.output_logprobs
                loss_mask = p_loss_mask + [0] * gap + [1] * resp.output_len
                versions = p_versions + [-1] * gap + resp.output_versions
                turn_ids = p_turn_ids + [-1] * gap + [own_turn] * resp.output_len
            else:
                logger.warning(
                    "the child %s's input (%d tokens) is not longer than its parent's row (%d tokens); "
                    "the parent is ignored and its tokens masked out",
                    self.api_type.value, resp.input_len, p_len,
                )
        reward = self.reward if self.reward is not None else 0.0
        original = self.original_reward if self.original_reward is not None else reward
        self._cache = {
            "input_ids": torch.tensor(seq).unsqueeze(0),
            "loss_mask": torch.tensor(loss_mask).unsqueeze(0),
            "logprobs": torch.tensor(logprobs).unsqueeze(0),
            "versions": torch.tensor(versions).unsqueeze(0),
            "turn_ids": torch.tensor(turn_ids, dtype=torch.int32).unsqueeze(0),
            "attention_mask": torch.ones(len(seq), dtype=torch.bool).unsqueeze(0),
            "rewards": torch.tensor([float(reward)]),
            "original_rewards": torch.tensor([float(original)]),
        }
        return self._cache
