"""Workflows for the worker's tests, written as AReaL's are (imports from rollout_client.areal)."""

from __future__ import annotations

import asyncio

import numpy as np

from typing import Any, Dict, List

from rollout_client.areal import AsyncRewardWrapper, workflow_context
from rollout_client.areal.api import InferenceEngine, ModelRequest, RolloutWorkflow
from rollout_client.areal.api.cli_args import GenerationHyperparameters
from rollout_client.areal.utils import stats_tracker
from rollout_client.areal.utils.hf_utils import apply_chat_template


class OneTurn(RolloutWorkflow):
    """Generates once from data["prompt_ids"], rewards 1.0 when the first token is data["want"]."""

    def __init__(self, max_new_tokens: int = 4) -> None:
        self.gconfig = GenerationHyperparameters(max_new_tokens=max_new_tokens)

    async def arun_episode(self, engine: InferenceEngine, data):
        print("a user's print must not reach the channel")
        resp = await engine.agenerate(ModelRequest(input_ids=list(data["prompt_ids"]), gconfig=self.gconfig))
        reward = 1.0 if resp.output_tokens[:1] == [data["want"]] else 0.0
        stats_tracker.get(workflow_context.stat_scope()).scalar(reward=reward, version=engine.get_version())
        seq = resp.input_tokens + resp.output_tokens
        n_in = resp.input_len
        return {
            "input_ids": np.asarray([seq], dtype=np.int32),
            "loss_mask": np.asarray([[0] * n_in + [1] * resp.output_len], dtype=np.int32),
            "logprobs": np.asarray([[0.0] * n_in + resp.output_logprobs], dtype=np.float32),
            "versions": np.asarray([[-1] * n_in + resp.output_versions], dtype=np.int32),
            "rewards": np.asarray([reward], dtype=np.float32),
        }


class Rejecting(RolloutWorkflow):
    async def arun_episode(self, engine, data):
        return None


class Raising(RolloutWorkflow):
    async def arun_episode(self, engine, data):
        raise ValueError(f"no answer key in {sorted(data)}")


class Waiting(RolloutWorkflow):
    """Generates and waits for the answer; the test cancels it instead."""

    async def arun_episode(self, engine, data):
        await engine.agenerate(ModelRequest(input_ids=[1, 2, 3]))
        await asyncio.sleep(3600)


class NeedsKwargs(RolloutWorkflow):
    def __init__(self, reward_fn: str) -> None:
        self.reward_fn = reward_fn

    async def arun_episode(self, engine, data):
        return None


class NotAWorkflow:
    pass


class SyncAgent:
    def run(self, data):
        return 1.0


def _exact_answer(tokenizer: Any, completion_ids: List[int], answer: str) -> float:
    return float(tokenizer.decode(completion_ids, skip_special_tokens=True) == answer)


class Prompted(RolloutWorkflow):
    """Constructed as AReaL's trainer scripts construct workflows: ``gconfig`` and ``tokenizer``
    from the runtime. Renders data["question"] with the engine's chat template, generates, and
    scores the decoded completion against data["answer"] in AsyncRewardWrapper's threads."""

    def __init__(self, gconfig: GenerationHyperparameters, tokenizer: Any, enable_thinking: bool = False) -> None:
        self.gconfig = gconfig.new_with_stop_and_pad_token_ids(tokenizer)
        self.tokenizer = tokenizer
        self.enable_thinking = enable_thinking
        self.reward = AsyncRewardWrapper(_exact_answer, max_workers=2)

    async def arun_episode(self, engine: InferenceEngine, data):
        input_ids = apply_chat_template(
            self.tokenizer, [{"role": "user", "content": data["question"]}],
            add_generation_prompt=True, enable_thinking=self.enable_thinking,
        )
        req = ModelRequest(input_ids=input_ids, gconfig=self.gconfig.new(n_samples=1), tokenizer=self.tokenizer)
        resp = await engine.agenerate(req)
        reward = await self.reward(self.tokenizer, resp.output_tokens, data["answer"])
        stats_tracker.get(workflow_context.stat_scope()).scalar(reward=reward)
        return None


class TakesAnything(RolloutWorkflow):
    """A constructor with ``**kwargs`` gets gconfig and tokenizer; reports them as stats."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs

    async def arun_episode(self, engine, data):
        stats_tracker.get(workflow_context.stat_scope()).scalar(
            n_kwargs=len(self.kwargs),
            max_new_tokens=self.kwargs["gconfig"].max_new_tokens,
            has_tokenizer=float(self.kwargs["tokenizer"] is not None),
        )
        return None


class ScoringAgent:
    """AReaL's agent form: ``run(data, **extra_kwargs)`` returns what data["returns"] names, computed
    from data and the extra_kwargs the engine passes (no server is called)."""

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale

    async def run(self, data: Dict[str, Any], **extra_kwargs: Any):
        await asyncio.sleep(0)
        stats_tracker.get(workflow_context.stat_scope()).scalar(calls=1.0)
        returns = data["returns"]
        if returns == "reward":
            return self.scale * len(data["text"]) if extra_kwargs["api_key"] == "secret" else 0.0
        if returns == "rewards":
            return {f"{extra_kwargs['base_url']}#{i}": self.scale * i for i in range(2)}
        if returns == "nan-stat":
            stats_tracker.get(workflow_context.stat_scope()).scalar(score=float("nan"))
            return 1.0
        if returns == "wait":
            await asyncio.sleep(3600)
        return {"none": None, "nan": float("nan"), "inf-in-dict": {"c1": 1, "c2": float("inf")}, "text": "five"}[returns]
