"""A multi-attempt workflow on rollout_client.areal imports: a port of AReaL's
``areal/workflow/multi_turn.py`` (the retry message is worded differently, and input tokens that
do not extend the previous turns raise ``ValueError`` where AReaL asserts).

One episode: generate an answer; while the reward is 0 and turns remain, append the answer (and
EOS when it did not end with one) and a fixed "try again" user turn to the prompt, and generate
again. The reward of the last turn is discounted by ``turn_discount`` per retry; ``reward`` and
``num_turns`` are recorded under the episode's stats scope. The row holds every turn's tokens,
with the model's tokens in the loss mask and their turn index in ``turn_ids``. Needs torch.
"""

from __future__ import annotations

import uuid
from typing import Any, Callable, Dict, List, Union

import torch

from rollout_client.areal import workflow_context
from rollout_client.areal.api import AsyncRewardWrapper, InferenceEngine, ModelRequest, RolloutWorkflow
from rollout_client.areal.api.cli_args import GenerationHyperparameters
from rollout_client.areal.utils import logging, stats_tracker
from rollout_client.areal.utils.dynamic_import import import_from_string
from rollout_client.areal.utils.hf_utils import apply_chat_template

logger = logging.getLogger("MultiTurnWorkflow")

RETRY_MESSAGE = (
    "Your answer is either wrong or not parsable to the reward function. Read the question again, "
    "check your previous attempts, and answer once more."
)


class MultiTurnWorkflow(RolloutWorkflow):
    """Retry until the reward is positive or ``max_turns`` generations were made."""

    def __init__(
        self,
        reward_fn: Union[Callable[..., Any], str],
        gconfig: GenerationHyperparameters,
        tokenizer: Any,
        max_turns: int,
        turn_discount: float,
    ) -> None:
        if max_turns <= 0:
            raise ValueError("max_turns must be positive")
        if not 0.0 < turn_discount <= 1.0:
            raise ValueError("turn_discount must be in (0, 1]")
        if isinstance(reward_fn, str):  # "module.path.function", as a configuration file names it
            reward_fn = import_from_string(reward_fn)
        self.reward_fn = reward_fn
        self.gconfig = gconfig.new_with_stop_and_pad_token_ids(tokenizer)
        self.tokenizer = tokenizer
        self.max_turns = max_turns
        self.turn_discount = turn_discount
        self.async_reward_fn = AsyncRewardWrapper(reward_fn)
        # The retry turn's tokens: the template of [assistant, user] minus that of [assistant], so
        # no system prompt is repeated and no re-encoding of the answer is needed.
        answered = [{"role": "assistant", "content": "some random message."}]
        before = apply_chat_template(tokenizer, answered, tokenize=True)
        after = apply_chat_template(
            tokenizer, answered + [{"role": "user", "content": RETRY_MESSAGE}], tokenize=True, add_generation_prompt=True
        )
        self.multi_turn_prompt_ids = after[len(before):]

    async def arun_episode(self, engine: InferenceEngine, data: Dict[str, Any]) -> Dict[str, torch.Tensor]:
        seq: List[int] = []
        logprobs: List[float] = []
        loss_mask: List[int] = []
        versions: List[int] = []
        turn_ids: List[int] = []
        input_ids: List[int] = apply_chat_template(self.tokenizer, data["messages"], tokenize=True, add_generation_prompt=True)
        turn, reward, discount = 0, 0.0, 1.0
        while reward == 0.0 and turn < self.max_turns:
            req = ModelRequest(
                rid=uuid.uuid4().hex, input_ids=input_ids, gconfig=self.gconfig.new(n_samples=1), tokenizer=self.tokenizer
            )
            resp = await engine.agenerate(req)
            reward = await self.async_reward_fn(
                self.tokenizer.decode(input_ids),
                self.tokenizer.decode(resp.output_tokens),
                resp.input_tokens,
                resp.output_tokens,
                **data,
            )
            new_input = len(resp.input_tokens) - len(seq)
            if seq and resp.input_tokens[:-new_input] != seq:
                raise ValueError("the engine's input tokens do not extend the previous turns")
            seq += resp.input_tokens[-new_input:] + resp.output_tokens
            logprobs += [0.0] * new_input + resp.output_logprobs
            loss_mask += [0] * new_input + [1] * resp.output_len
            versions += [-1] * new_input + resp.output_versions
            turn_ids += [-1] * new_input + [turn] * resp.output_len
            turn += 1
            if reward == 0.0 and turn < self.max_turns:
                input_ids = input_ids + resp.output_tokens
                if resp.output_tokens and resp.output_tokens[-1] != self.tokenizer.eos_token_id:
                    input_ids += [self.tokenizer.eos_token_id]
                input_ids += self.multi_turn_prompt_ids
                discount *= self.turn_discount
        reward = float(reward * discount)
        stats_tracker.get(workflow_context.stat_scope()).scalar(reward=reward, num_turns=turn)
        row = {
            "input_ids": torch.tensor(seq, dtype=torch.int32),
            "logprobs": torch.tensor(logprobs, dtype=torch.float32),
            "loss_mask": torch.tensor(loss_mask, dtype=torch.int32),
            "versions": torch.tensor(versions, dtype=torch.int32),
            "turn_ids": torch.tensor(turn_ids, dtype=torch.int32),
            "rewards": torch.tensor(reward, dtype=torch.float32),
            "attention_mask": torch.ones(len(seq), dtype=torch.bool),
        }
        return {key: value.unsqueeze(0) for key, value in row.items()}
