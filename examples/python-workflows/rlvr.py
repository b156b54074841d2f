"""A single-turn RLVR workflow written against rollout_client.areal, structured as AReaL's
``areal/workflow/rlvr.py``: only the imports differ from an AReaL workflow.

One episode: chat-template the item's messages, generate one completion, score it with the reward
function (in a thread pool, with a timeout), record ``reward`` under the episode's stats scope and
return one row: ``input_ids``, ``loss_mask``, ``logprobs``, ``versions``, ``turn_ids``,
``attention_mask`` (each ``[1, L]``) and ``rewards`` (``[1]``). Needs torch.

The engine runs it from ``rollout.workflow = "python:rlvr:RLVRWorkflow"`` (letters.conf, rlvr.conf;
docs/python-workflows.md); ``clients/python/tests/test_areal_api.py`` also runs it against a fake engine.
"""

from __future__ import annotations

import uuid
from typing import Any, Callable, Dict, List, Tuple, Union

import torch

from rollout_client.areal import workflow_context
from rollout_client.areal.api import (
    AsyncRewardWrapper,
    InferenceEngine,
    ModelRequest,
    ModelResponse,
    RolloutWorkflow,
)
from rollout_client.areal.api.cli_args import GenerationHyperparameters
from rollout_client.areal.utils import logging, stats_tracker
from rollout_client.areal.utils.dynamic_import import import_from_string
from rollout_client.areal.utils.hf_utils import apply_chat_template
from rollout_client.areal.utils.perf_tracer import atrace_session_phase, session_context, trace_session

logger = logging.getLogger("RLVRWorkflow")


def default_get_input_ids_fn(data: Any, tokenizer: Any, enable_thinking: bool) -> List[int]:
    """The prompt's token ids: the chat template with a generation prompt."""
    return apply_chat_template(
        tokenizer, data, tokenize=True, add_generation_prompt=True, enable_thinking=enable_thinking
    )


def default_data_extract_prompt_fn(data: Dict[str, Any]) -> Any:
    """The item's ``messages``."""
    return data["messages"]


class RLVRWorkflow(RolloutWorkflow):
    """Generate once, score with a verifiable reward, return one training row."""

    def __init__(
        self,
        reward_fn: Union[Callable[..., Any], str],
        gconfig: GenerationHyperparameters,
        tokenizer: Any,
        enable_thinking: bool = False,
        get_input_ids_fn: Union[Callable[[Any, Any, bool], List[int]], str] = default_get_input_ids_fn,
        data_extract_prompt_fn: Union[Callable[[Dict[str, Any]], Any], str] = default_data_extract_prompt_fn,
    ) -> None:
        self.reward_fn = reward_fn
        self.tokenizer = tokenizer
        self.gconfig = gconfig.new_with_stop_and_pad_token_ids(tokenizer)
        self.enable_thinking = enable_thinking
        if not isinstance(reward_fn, str):
            self.async_reward_fn = AsyncRewardWrapper(reward_fn)
        if isinstance(get_input_ids_fn, str):
            get_input_ids_fn = import_from_string(get_input_ids_fn)
        self.get_input_ids_fn = get_input_ids_fn
        if isinstance(data_extract_prompt_fn, str):
            data_extract_prompt_fn = import_from_string(data_extract_prompt_fn)
        self.data_extract_prompt_fn = data_extract_prompt_fn

    @trace_session("reward")
    async def _compute_rewards(self, resp: ModelResponse, prompt_str: str, task_data: Dict[str, Any]) -> float:
        completion = self.tokenizer.decode(resp.output_tokens)
        return await self.async_reward_fn(prompt_str, completion, resp.input_tokens, resp.output_tokens, **task_data)

    @session_context()
    async def _collect_samples(
        self, engine: InferenceEngine, req: ModelRequest, prompt_str: str, task_data: Dict[str, Any]
    ) -> Tuple[ModelResponse, float]:
        async with atrace_session_phase("generate"):
            resp = await engine.agenerate(req)
        reward = await self._compute_rewards(resp, prompt_str, task_data)
        stats_tracker.get(workflow_context.stat_scope()).scalar(reward=reward)
        return resp, reward

    async def arun_episode(self, engine: InferenceEngine, data: Dict[str, Any]) -> Dict[str, torch.Tensor]:
        if isinstance(self.reward_fn, str):
            self.reward_fn = import_from_string(self.reward_fn)
            self.async_reward_fn = AsyncRewardWrapper(self.reward_fn)
        input_ids = self.get_input_ids_fn(self.data_extract_prompt_fn(data), self.tokenizer, self.enable_thinking)
        req = ModelRequest(
            rid=uuid.uuid4().hex,
            input_ids=input_ids,
            gconfig=self.gconfig.new(n_samples=1),
            tokenizer=self.tokenizer,
        )
        prompt_str = self.tokenizer.decode(input_ids)
        resp, reward = await self._collect_samples(engine, req, prompt_str, data)

        prompt_len, out_len = resp.input_len, resp.output_len
        seq = resp.input_tokens + resp.output_tokens
        row = {
            "input_ids": torch.tensor(seq, dtype=torch.int32),
            "loss_mask": torch.tensor([0] * prompt_len + [1] * out_len, dtype=torch.int32),
            "logprobs": torch.tensor([0.0] * prompt_len + resp.output_logprobs, dtype=torch.float32),
            "versions": torch.tensor([-1] * prompt_len + resp.output_versions, dtype=torch.int32),
            "turn_ids": torch.tensor([-1] * prompt_len + [0] * out_len, dtype=torch.int32),
            "attention_mask": torch.ones(len(seq), dtype=torch.bool),
            "rewards": torch.tensor(reward, dtype=torch.float32),
        }
        return {key: value.unsqueeze(0) for key, value in row.items()}
