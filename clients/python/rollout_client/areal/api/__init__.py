"""AReaL's ``areal.api`` names a workflow imports."""

from .cli_args import GenerationHyperparameters
from .engine_api import InferenceEngine
from .io_struct import ModelRequest, ModelResponse
from .reward_api import AsyncRewardWrapper
from .workflow_api import RolloutWorkflow

__all__ = [
    "AsyncRewardWrapper",
    "GenerationHyperparameters",
    "InferenceEngine",
    "ModelRequest",
    "ModelResponse",
    "RolloutWorkflow",
]
