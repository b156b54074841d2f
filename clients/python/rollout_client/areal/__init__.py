"""AReaL's workflow API in this package: run an AReaL workflow by changing only its imports.

Every module here has the path of its AReaL counterpart under ``rollout_client.areal``, so a
workflow is ported by replacing the leading ``areal.`` of its imports::

    from areal import workflow_context                  ->  from rollout_client.areal import workflow_context
    from areal.api import ModelRequest, RolloutWorkflow ->  from rollout_client.areal.api import ...
    from areal.utils import logging, stats_tracker      ->  from rollout_client.areal.utils import ...

Why a sub-package of ``rollout_client`` and not a top-level package of its own: it installs with
the same ``pip install ./clients/python`` (offline, the in-tree build backend packs everything
under ``rollout_client/``), a process that has the trainer client has it too, and it cannot shadow
a real ``areal`` installed next to it. It needs numpy only; torch only for torch tensors and
:meth:`InteractionWithTokenLogpReward.to_tensor_dict`; never transformers, openai or AReaL.

The names are also importable from here directly. docs/python-workflows.md has the table of
AReaL names and where our semantics differ.
"""

from .api import (
    AsyncRewardWrapper,
    GenerationHyperparameters,
    InferenceEngine,
    ModelRequest,
    ModelResponse,
    RolloutWorkflow,
)
from .api.cli_args import UnknownGenerationKeyError, from_gconfig
from .experimental.openai.types import InteractionWithTokenLogpReward
from .infra import workflow_context
from .infra.workflow_context import WorkflowContext
from .tokenizer import BatchEncoding, EngineTokenizer
from .utils import logging, stats_tracker
from .utils.data import concat_padded_tensors
from .utils.dynamic_import import import_from_string
from .utils.hf_utils import apply_chat_template

__all__ = [
    "AsyncRewardWrapper",
    "BatchEncoding",
    "EngineTokenizer",
    "GenerationHyperparameters",
    "InferenceEngine",
    "InteractionWithTokenLogpReward",
    "ModelRequest",
    "ModelResponse",
    "RolloutWorkflow",
    "UnknownGenerationKeyError",
    "WorkflowContext",
    "apply_chat_template",
    "concat_padded_tensors",
    "from_gconfig",
    "import_from_string",
    "logging",
    "stats_tracker",
    "workflow_context",
]
