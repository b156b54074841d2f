"""Toy AReaL-style workflows the JVM tests of the Python workflow pool run (PythonWorkflowTest)."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any, Dict, Optional

import numpy as np

from rollout_client.areal import workflow_context
from rollout_client.areal.api import InferenceEngine, ModelRequest, RolloutWorkflow
from rollout_client.areal.api.cli_args import GenerationHyperparameters
from rollout_client.areal.utils import stats_tracker


class Echo(RolloutWorkflow):
    """Generates from ``data["ids"]`` and returns one row; ``data["mode"]`` picks a misbehaviour."""

    def __init__(self, gconfig: Optional[GenerationHyperparameters] = None, label: str = "echo", **_: Any) -> None:
        self.gconfig = gconfig if gconfig is not None else GenerationHyperparameters(max_new_tokens=8)
        self.label = label

    async def arun_episode(self, engine: InferenceEngine, data: Dict[str, Any]) -> Any:
        mode = data.get("mode", "row")
        if mode == "none":
            return None
        if mode == "raise":
            raise ValueError(f"no answer for item {data.get('id')}")
        if mode in ("sleep", "block") and data.get("started"):
            with open(data["started"], "w") as f:  # the test's probe: the task is running
                f.write("started")
        if mode == "sleep":
            await asyncio.sleep(3600)
        if mode == "block":
            time.sleep(3600)  # blocks the worker's event loop: only a kill ends it
        if mode == "pid":
            await asyncio.sleep(0.2)
            with open(data["pid_file"], "w") as f:
                f.write(str(os.getpid()))
            await asyncio.sleep(3600)
        gconfig = self.gconfig.new(n_samples=1, **data.get("gconfig", {}))
        req = ModelRequest(input_ids=list(data["ids"]), gconfig=gconfig)
        if mode == "two":
            resps = await asyncio.gather(engine.agenerate(req), engine.agenerate(req.copy()))
        else:
            resps = [await engine.agenerate(req)]
        resp = resps[0]
        stats_tracker.get(workflow_context.stat_scope()).scalar(reward=float(len(resp.output_tokens)), seen=1)
        seq = resp.input_tokens + resp.output_tokens
        p, o = resp.input_len, resp.output_len
        row = {
            "input_ids": np.array([seq], dtype=np.int64),
            "attention_mask": np.ones((1, len(seq)), dtype=bool),
            "loss_mask": np.array([[0] * p + [1] * o], dtype=np.int32),
            "logprobs": np.array([[0.0] * p + resp.output_logprobs], dtype=np.float32),
            "versions": np.array([[-1] * p + resp.output_versions], dtype=np.int32),
            "rewards": np.array([float(engine.get_version())], dtype=np.float64),
        }
        if mode == "bad_dtype":
            row["rewards"] = np.array([1 + 2j])
        if mode == "rank3":
            row["rewards"] = np.zeros((1, 1, 1), dtype=np.float32)
        if mode == "ragged":
            row["loss_mask"] = [[0, 1], [1]]
        if mode == "missing_key":
            del row["attention_mask"]
        return row


class NotAWorkflow:
    """Has no arun_episode: refused at start."""


class NeedsKwarg(RolloutWorkflow):
    def __init__(self, required: int) -> None:
        self.required = required

    async def arun_episode(self, engine: InferenceEngine, data: Dict[str, Any]) -> Any:
        return None


class ToyAgent:
    """AReaL's agent form: async run(data, **extra_kwargs) returns a reward, rewards by id, or None."""

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale

    async def run(self, data: Dict[str, Any], **extra_kwargs: Any) -> Any:
        mode = data.get("mode", "reward")
        stats_tracker.get(workflow_context.stat_scope()).scalar(agent_ran=1)
        if mode == "rewards":
            return {"c1": 0.25, "c2": 0.75}
        if mode == "none":
            return None
        if mode == "raise":
            raise RuntimeError("the tool server is down")
        if mode == "sleep":
            if data.get("started"):
                with open(data["started"], "w") as f:  # the test's probe: the task is running
                    f.write("started")
            await asyncio.sleep(3600)
        # The episode's session: the proxy's URL and key reach run() as AReaL passes them.
        return self.scale * len(extra_kwargs["base_url"]) + (1000.0 if extra_kwargs["api_key"] == "sk-test" else 0.0)
