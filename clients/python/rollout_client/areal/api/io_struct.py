"""A generation request and its response, as AReaL's ``areal.api.io_struct``.

Field names, order and defaults are AReaL's. Tokenizers, processors and images are carried as
opaque objects (``Any``): nothing here imports transformers or PIL.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .cli_args import GenerationHyperparameters

__all__ = ["ModelRequest", "ModelResponse", "StopTokensError"]


class StopTokensError(ValueError):
    """A response's stop tokens cannot be found or stripped (no tokenizer, or the tokens disagree
    with ``stop_reason``)."""


def _new_rid() -> str:
    return str(uuid.uuid4())


@dataclass
class ModelRequest:
    """One generation: ``input_ids`` sampled with ``gconfig``.

    ``rid`` defaults to a fresh UUID string (requests sharing a ``rid`` may share the server's
    prefix cache). ``metadata`` is carried for the workflow; ``tokenizer`` lets the engine decode;
    ``image_data``, ``processor`` and ``vision_msg_vllm`` are for vision-language models.
    """

    rid: str = field(default_factory=_new_rid)
    input_ids: List[int] = field(default_factory=list)
    gconfig: GenerationHyperparameters = field(default_factory=GenerationHyperparameters)
    metadata: Dict[str, Any] = field(default_factory=dict)
    tokenizer: Any = None
    image_data: Optional[List[str]] = field(default_factory=list)
    processor: Any = None
    vision_msg_vllm: Optional[list] = None

    def copy(self) -> "ModelRequest":
        """A copy with its own ``input_ids``, ``gconfig``, ``metadata``, ``image_data`` and
        ``vision_msg_vllm`` containers (shallow copies); tokenizer and processor are shared."""
        return ModelRequest(
            rid=self.rid,
            input_ids=list(self.input_ids),
            gconfig=self.gconfig.new(),
            metadata=dict(self.metadata),
            tokenizer=self.tokenizer,
            image_data=list(self.image_data) if self.image_data is not None else None,
            processor=self.processor,
            vision_msg_vllm=list(self.vision_msg_vllm) if self.vision_msg_vllm is not None else None,
        )


@dataclass
class ModelResponse:
    """What a generation produced.

    ``output_logprobs[i]`` and ``output_versions[i]`` belong to ``output_tokens[i]`` (the version is
    the weight version that sampled the token). ``stop_reason`` is ``"length"``, ``"stop"``,
    ``"tool_calls"`` or ``"abort"``. ``latency`` and ``ttft`` are seconds (``inf`` when unknown),
    ``itl`` the inter-token latencies.
    """

    input_tokens: List[int] = field(default_factory=list)
    output_tokens: List[int] = field(default_factory=list)
    output_logprobs: List[float] = field(default_factory=list)
    output_versions: List[int] = field(default_factory=list)
    stop_reason: str = "stop"
    tokenizer: Any = None
    input_images: List[Any] = field(default_factory=list)
    processor: Any = None
    latency: float = float("inf")
    ttft: float = float("inf")
    itl: List[float] = field(default_factory=list)
    routed_experts: Any = None

    @property
    def input_len(self) -> int:
        """``len(input_tokens)``."""
        return len(self.input_tokens)

    @property
    def output_len(self) -> int:
        """``len(output_tokens)``."""
        return len(self.output_tokens)

    def _stop_ids(self, what: str) -> set:
        if self.tokenizer is None:
            raise StopTokensError(f"tokenizer is None, cannot {what}")
        ids = {self.tokenizer.eos_token_id, self.tokenizer.pad_token_id}
        ids.discard(None)
        return ids

    @property
    def end_with_stop(self) -> bool:
        """Whether the last output token is the tokenizer's EOS or PAD (False when there is no
        output). Raises :class:`StopTokensError` without a tokenizer."""
        stop_ids = self._stop_ids("check end_with_stop")
        return bool(self.output_tokens) and self.output_tokens[-1] in stop_ids

    @property
    def output_tokens_without_stop(self) -> List[int]:
        """The output tokens without their trailing run of EOS/PAD tokens.

        With ``stop_reason`` ``"length"`` or ``"abort"``, or no output, the tokens unchanged.
        Otherwise the output must end with EOS or PAD and not consist of them only, else
        :class:`StopTokensError`; so it is without a tokenizer.
        """
        stop_ids = self._stop_ids("get output_tokens_without_stop")
        if self.stop_reason in ("length", "abort") or not self.output_tokens:
            return self.output_tokens
        if not self.end_with_stop:
            raise StopTokensError(
                f"output_tokens end with {self.output_tokens[-1]}, not EOS or PAD, but stop_reason is {self.stop_reason}"
            )
        n = 0
        for token in reversed(self.output_tokens):
            if token not in stop_ids:
                break
            n += 1
        if n == len(self.output_tokens):
            raise StopTokensError("every output token is EOS or PAD: stripping them would leave no output")
        return self.output_tokens[:-n]
