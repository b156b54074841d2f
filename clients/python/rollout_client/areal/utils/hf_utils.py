"""The chat-template helper AReaL's workflows call, as ``areal.utils.hf_utils.apply_chat_template``.

No transformers import: the helper calls the tokenizer's own ``apply_chat_template``. AReaL's
tokenizer loaders (``load_hf_tokenizer``) are not provided; a workflow gets its tokenizer from the
runtime or loads it with transformers itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Dict, List, Union

__all__ = ["apply_chat_template"]


def apply_chat_template(
    tokenizer: Any, messages: List[Dict[str, Any]], *, tokenize: bool = True, **kwargs: Any
) -> Union[List[int], str]:
    """``tokenizer.apply_chat_template(messages, tokenize=tokenize, **kwargs)`` with its result
    normalised: when ``tokenize`` is true and the tokenizer returns a mapping (transformers >= 5
    returns a ``BatchEncoding``), its ``"input_ids"`` as a list of ints; otherwise the result."""
    result = tokenizer.apply_chat_template(messages, tokenize=tokenize, **kwargs)
    if tokenize and isinstance(result, Mapping):
        return list(result["input_ids"])
    return result
