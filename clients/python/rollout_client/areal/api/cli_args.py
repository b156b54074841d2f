"""Sampling parameters of a generation request, as AReaL's ``areal.api.cli_args``.

:class:`GenerationHyperparameters` has AReaL's fields, defaults and copy methods. The engine's
``gconfig { }`` section (docs/configuration.md, "gconfig") uses the same key names plus
``reward_normalization_use_std``; :func:`from_gconfig` builds the dataclass from such a dict.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Dict, List, Mapping, Optional

__all__ = [
    "ENGINE_ONLY_GCONFIG_KEYS",
    "GenerationHyperparameters",
    "UnknownGenerationKeyError",
    "from_gconfig",
]

#: Keys of the engine's ``gconfig`` that AReaL's dataclass has no field for. They configure the
#: engine's group wrapper, which runs outside the workflow, so :func:`from_gconfig` accepts and drops them.
ENGINE_ONLY_GCONFIG_KEYS = frozenset({"reward_normalization_use_std"})


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
