"""What a workflow sees of the inference engine, as AReaL's ``areal.api.engine_api.InferenceEngine``.

Only the two methods a workflow calls are here; AReaL's other methods (submit, prepare_batch,
weight updates, ...) belong to the trainer side, which the Rollout Engine runs itself.
"""

from __future__ import annotations

import abc

from .io_struct import ModelRequest, ModelResponse

__all__ = ["InferenceEngine"]


class InferenceEngine(abc.ABC):
    """The engine a workflow generates through.

    As in AReaL the methods are not abstract: they raise ``NotImplementedError`` unless overridden,
    so a test double may implement only what its workflow calls.
    """

    async def agenerate(self, req: ModelRequest) -> ModelResponse:
        """Generate one response to ``req`` (``req.gconfig.n_samples`` is 1 in the workflows).

        The response's ``input_tokens`` are ``req.input_ids``; each output token carries its
        log-probability and the weight version that sampled it.
        """
        raise NotImplementedError()

    def get_version(self) -> int:
        """The weight version the engine currently generates with."""
        raise NotImplementedError()
