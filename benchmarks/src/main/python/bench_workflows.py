"""Workflows for `bin/rollout bench python-workflow` (PythonWorkflowBenchmark): an RLVR-style one
as AReaL writes it (with numpy rows), and two that stop earlier, to split the per-episode cost."""

from __future__ import annotations

from typing import Any, Dict

import numpy as np

from rollout_client.areal import workflow_context
from rollout_client.areal.api import InferenceEngine, ModelRequest, RolloutWorkflow
from rollout_client.areal.api.cli_args import GenerationHyperparameters
from rollout_client.areal.utils import stats_tracker


def _ids(data: Dict[str, Any]) -> list:
    return [ord(c) for c in data["prompt"]]


class Null(RolloutWorkflow):
    """Returns None at once: the channel and the event loop, nothing else."""

    def __init__(self, **_: Any) -> None:
        pass

    async def arun_episode(self, engine: InferenceEngine, data: Dict[str, Any]) -> Any:
        return None


class GenerateOnly(RolloutWorkflow):
    """One agenerate, then None: adds the generation's round trip to the JVM."""

    def __init__(self, gconfig: GenerationHyperparameters, **_: Any) -> None:
        self.gconfig = gconfig

    async def arun_episode(self, engine: InferenceEngine, data: Dict[str, Any]) -> Any:
        await engine.agenerate(ModelRequest(input_ids=_ids(data), gconfig=self.gconfig.new(n_samples=1)))
        return None


class RlvrStyle(RolloutWorkflow):
    """AReaL's RLVR shape: generate, reward, record it, return one row of seven tensors."""

    def __init__(self, gconfig: GenerationHyperparameters, **_: Any) -> None:
        self.gconfig = gconfig

    async def arun_episode(self, engine: InferenceEngine, data: Dict[str, Any]) -> Any:
        resp = await engine.agenerate(ModelRequest(input_ids=_ids(data), gconfig=self.gconfig.new(n_samples=1)))
        reward = 1.0 if resp.output_tokens and resp.output_tokens[0] == ord("a") else 0.0
        stats_tracker.get(workflow_context.stat_scope()).scalar(reward=reward)
        p, o = resp.input_len, resp.output_len
        seq = resp.input_tokens + resp.output_tokens
        return {
            "input_ids": np.array([seq], dtype=np.int32),
            "loss_mask": np.array([[0] * p + [1] * o], dtype=np.int32),
            "logprobs": np.array([[0.0] * p + resp.output_logprobs], dtype=np.float32),
            "versions": np.array([[-1] * p + resp.output_versions], dtype=np.int32),
            "attention_mask": np.ones((1, len(seq)), dtype=bool),
            "rewards": np.array([reward], dtype=np.float32),
        }
