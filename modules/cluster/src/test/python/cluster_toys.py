"""An AReaL-style Python workflow for the group runner's tests (PythonWorkflowGroupTest)."""

from __future__ import annotations

import asyncio
from typing import Any, Dict

from rollout_client.areal import workflow_context
from rollout_client.areal.api import InferenceEngine, ModelRequest, RolloutWorkflow
from rollout_client.areal.api.cli_args import GenerationHyperparameters


class BlockOrRaise(RolloutWorkflow):
    """Every slot generates from the prompt's code points (the scripted engine blocks on 7); with
    ``raise_slot`` set, that slot raises after 0.3 s instead. A cancelled slot appends its index to
    the file ``log`` before it lets the cancellation through."""

    def __init__(self, log: str, raise_slot: int = -1, **_: Any) -> None:
        self.log = log
        self.raise_slot = raise_slot

    async def arun_episode(self, engine: InferenceEngine, data: Dict[str, Any]) -> Any:
        slot = workflow_context.get().sample_idx
        try:
            if slot == self.raise_slot:
                await asyncio.sleep(0.3)
                raise RuntimeError(f"slot {slot} failed on purpose")
            ids = [ord(c) for c in data["prompt"]]
            await engine.agenerate(ModelRequest(input_ids=ids, gconfig=GenerationHyperparameters(max_new_tokens=4)))
            return None
        except asyncio.CancelledError:
            with open(self.log, "a") as f:
                f.write(f"{slot}\n")
            raise
