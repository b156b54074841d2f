"""Workflows for the worker's tests, written as AReaL's are (imports from rollout_client.areal)."""

from __future__ import annotations

import asyncio

import numpy as np

from rollout_client.areal import workflow_context
from rollout_client.areal.api import InferenceEngine, ModelRequest, RolloutWorkflow
from rollout_client.areal.api.cli_args import GenerationHyperparameters
from rollout_client.areal.utils import stats_tracker


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
