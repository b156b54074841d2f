"""Sampling parameters of a generation request, as AReaL's ``areal.api.cli_args``.

:class:`GenerationHyperparameters` has AReaL's fields, defaults and copy methods. The engine's
``gconfig { }`` section (docs/configuration.md, "gconfig") uses the same key names plus
``reward_normalization_use_std``; :func:`from_gconfig` builds the dataclass from such a dict.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any, ClassVar, Dict, FrozenSet, List, Mapping, Optional

from ..utils import logging

__all__ = [
    "ENGINE_ONLY_GCONFIG_KEYS",
    "GenerationHyperparameters",
    "UnknownGenerationKeyError",
    "UnsupportedApiFormatError",
    "from_gconfig",
]

#: Keys of the engine's ``gconfig`` that AReaL's dataclass has no field for. They configure the
#: engine's group wrapper, which runs outside the workflow, so :func:`from_gconfig` accepts and drops them.
ENGINE_ONLY_GCONFIG_KEYS = frozenset({"reward_normalization_use_std"})


logger = logging.getLogger("CLIArgs")

#: ``api_format`` of :meth:`GenerationHyperparameters.to_openai_args_dict` -> the OpenAI name of ``max_new_tokens``.
_MAX_NEW_TOKENS_NAME = {
    "completions": "max_completion_tokens",
    "responses": "max_output_tokens",
    "openai-agents": "max_tokens",  # the Agents SDK's max_tokens counts generated tokens only
}


class UnsupportedApiFormatError(ValueError):
    """``to_openai_args_dict`` was asked for a format other than completions, responses, openai-agents."""


class UnknownGenerationKeyError(KeyError):
    """A gconfig dict named a key that neither AReaL's dataclass nor the engine's gconfig has."""


@dataclass
class GenerationHyperparameters:
    """How one generation request samples: AReaL's fields with AReaL's defaults.

    ``n_samples`` is the group size (the workflows send ``new(n_samples=1)`` per request);
    ``max_new_tokens``/``max_tokens`` bound the generated and the total length; ``greedy`` sends
    temperature 0; ``stop_token_ids`` and ``stop`` end a generation; ``reward_normalization`` and
    ``drop_incomplete_group`` are read by the group wrapper, not sent to the server.
    No value is validated here: the engine checks the configuration it loads.
    """

    n_samples: int = 1
    max_new_tokens: int = 16384
    min_new_tokens: int = 0
    max_tokens: int = 32768
    greedy: bool = False
    top_p: float = 1.0
    top_k: int = int(1e8)
    temperature: float = 1.0
    stop_token_ids: List[int] = field(default_factory=list)
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    stop: Optional[List[str]] = None
    frequency_penalty: float = 0.0
    seed: Optional[int] = None
    lora_name: str = "default_lora"
    use_beam_search: bool = False
    reward_normalization: bool = False
    drop_incomplete_group: bool = False

    def new(self, **kwargs: Any) -> "GenerationHyperparameters":
        """A new object: this one's values (lists deep-copied) with ``kwargs`` replacing some.

        This object is not changed. A keyword that is not a field raises ``TypeError``, as in AReaL.
        """
        args = asdict(self)
        args.update(kwargs)
        return GenerationHyperparameters(**args)

    def new_with_stop_and_pad_token_ids(self, tokenizer: Any) -> "GenerationHyperparameters":
        """A copy whose ``stop_token_ids`` also hold ``tokenizer.pad_token_id`` and then
        ``tokenizer.eos_token_id``, each appended only when not there yet (as AReaL, a ``None`` id
        is appended as ``None``)."""
        stop_ids = list(self.stop_token_ids)
        for token_id in (tokenizer.pad_token_id, tokenizer.eos_token_id):
            if token_id not in stop_ids:
                stop_ids.append(token_id)
        return self.new(stop_token_ids=stop_ids)

    #: Fields the OpenAI APIs have no argument for: left out of :meth:`to_openai_args_dict`.
    _OPENAI_UNSUPPORTED_ARGS: ClassVar[FrozenSet[str]] = frozenset({
        "min_new_tokens", "greedy", "top_k", "stop_token_ids", "ignore_eos", "skip_special_tokens",
        "lora_name", "use_beam_search", "max_tokens",
    })
    #: Fields read by the group wrapper, never sent: left out silently.
    _WORKFLOW_ONLY_ARGS: ClassVar[FrozenSet[str]] = frozenset({"reward_normalization", "drop_incomplete_group"})

    def to_openai_args_dict(self, exclude_args: Optional[List[str]] = None, api_format: str = "completions") -> Dict[str, Any]:
        """Keyword arguments for an OpenAI client call, as AReaL's.

        ``n_samples`` becomes ``n`` and ``max_new_tokens`` ``max_completion_tokens``
        (``"completions"``), ``max_output_tokens`` (``"responses"``) or ``max_tokens``
        (``"openai-agents"``); another ``api_format`` raises :class:`UnsupportedApiFormatError`.
        Left out: the workflow-only fields, the fields OpenAI lacks and ``exclude_args``; an
        excluded field whose value is not its default is logged as a warning.
        """
        if api_format not in _MAX_NEW_TOKENS_NAME:
            raise UnsupportedApiFormatError(
                f"api_format {api_format!r} is not one of {', '.join(_MAX_NEW_TOKENS_NAME)}"
            )
        rename = {"n_samples": "n", "max_new_tokens": _MAX_NEW_TOKENS_NAME[api_format]}
        excluded = set(exclude_args or ()) | self._OPENAI_UNSUPPORTED_ARGS
        out: Dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in self._WORKFLOW_ONLY_ARGS:
                continue
            if f.name in excluded:
                default = f.default if f.default is not MISSING else f.default_factory()  # type: ignore[misc]
                if value != default:
                    logger.warning("unsupported arg for the OpenAI format: %s = %r", f.name, value)
                continue
            out[rename.get(f.name, f.name)] = value
        return out

    def to_openai_completions_args_dict(self, exclude_args: Optional[List[str]] = None) -> Dict[str, Any]:
        """:meth:`to_openai_args_dict` for the chat completions API."""
        return self.to_openai_args_dict(exclude_args=exclude_args, api_format="completions")

    def to_openai_responses_args_dict(self, exclude_args: Optional[List[str]] = None) -> Dict[str, Any]:
        """:meth:`to_openai_args_dict` for the responses API."""
        return self.to_openai_args_dict(exclude_args=exclude_args, api_format="responses")

    def to_openai_agents_model_settings_dict(self, exclude_args: Optional[List[str]] = None) -> Dict[str, Any]:
        """:meth:`to_openai_args_dict` for the OpenAI Agents SDK's model settings."""
        return self.to_openai_args_dict(exclude_args=exclude_args, api_format="openai-agents")


_FIELDS = frozenset(f.name for f in fields(GenerationHyperparameters))


def from_gconfig(gconfig: Optional[Mapping[str, Any]]) -> GenerationHyperparameters:
    """:class:`GenerationHyperparameters` from a dict of the engine's ``gconfig`` keys.

    Keys not given keep AReaL's defaults (which are also the engine's). ``None`` or ``{}`` gives the
    defaults. Keys in :data:`ENGINE_ONLY_GCONFIG_KEYS` are dropped; list values are copied into
    new lists. Raises :class:`UnknownGenerationKeyError` naming every key that is neither a field
    nor an engine-only key.
    """
    gconfig = dict(gconfig or {})
    unknown = sorted(k for k in gconfig if k not in _FIELDS and k not in ENGINE_ONLY_GCONFIG_KEYS)
    if unknown:
        raise UnknownGenerationKeyError(
            f"not a gconfig key: {', '.join(unknown)} (allowed: {', '.join(sorted(_FIELDS | ENGINE_ONLY_GCONFIG_KEYS))})"
        )
    values: Dict[str, Any] = {}
    for key, value in gconfig.items():
        if key in ENGINE_ONLY_GCONFIG_KEYS:
            continue
        if key in ("stop_token_ids", "stop") and value is not None:
            value = list(value)
        values[key] = value
    return GenerationHyperparameters(**values)
