"""Batching trajectories, as AReaL's ``areal.utils.data.concat_padded_tensors``.

AReaL's function takes torch tensors; this one takes torch tensors or numpy arrays (per key, all
of one kind) and needs torch only when given torch tensors. Padding is AReaL's: every key with
``pad_value`` (0.0 by default), ``attention_mask`` always with 0. So ``versions`` is padded with 0
here, as in AReaL, where :func:`rollout_client.concat_padded` (the engine's batches) pads it with -1.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

import numpy as np

__all__ = ["concat_padded_tensors", "get_batch_size", "is_multi_modal_key"]


def is_multi_modal_key(key: str) -> bool:
    """Whether ``key`` is a multimodal list (``multi_modal_input*``), merged per row, not padded."""
    return key.startswith("multi_modal_input")


def _is_torch(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "ndim") and hasattr(value, "shape")


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) or _is_torch(value)


def get_batch_size(data: Dict[str, Any]) -> int:
    """Rows of a trajectory dict: dim 0 of ``attention_mask``, else ``len(cu_seqlens) - 1``, else
    the length of ``multi_modal_input``, else dim 0 of the first array of rank >= 1; 0 if none."""
    if not data:
        return 0
    mask = data.get("attention_mask")
    if _is_array(mask) and mask.ndim >= 1:
        return int(mask.shape[0])
    cu = data.get("cu_seqlens")
    if _is_array(cu) and cu.ndim >= 1 and cu.shape[0] >= 1:
        return max(int(cu.shape[0]) - 1, 0)
    mmi = data.get("multi_modal_input")
    if isinstance(mmi, list):
        return len(mmi)
    for value in data.values():
        if _is_array(value) and value.ndim >= 1:
            return int(value.shape[0])
    return 0


def _pad_cat_dim0(key: str, values: Sequence[Any], pad_value: float) -> Any:
    torch_input = _is_torch(values[0])
    if any(_is_torch(v) != torch_input for v in values):
        raise TypeError(f"concat_padded_tensors: key '{key}' mixes torch tensors and numpy arrays")
    ndim = values[0].ndim
    for i, v in enumerate(values):
        if v.ndim != ndim:
            raise ValueError(f"concat_padded_tensors: key '{key}' is {ndim}-D in dict[0] but {v.ndim}-D in dict[{i}]")
    if ndim == 0:
        raise ValueError(f"concat_padded_tensors: key '{key}' is 0-D; tensors need a batch dimension")
    widths = [max(int(v.shape[d]) for v in values) for d in range(1, ndim)]
    if torch_input:
        import torch
        import torch.nn.functional as F

        padded = []
        for v in values:
            pads: List[int] = []
            for d in reversed(range(1, ndim)):
                pads.extend([0, widths[d - 1] - int(v.shape[d])])
            padded.append(F.pad(v, pads, value=pad_value) if any(pads) else v)
        return torch.cat(padded, dim=0)
    padded_np = []
    for v in values:
        spec = [(0, 0)] + [(0, widths[d - 1] - int(v.shape[d])) for d in range(1, ndim)]
        padded_np.append(np.pad(v, spec, constant_values=pad_value) if any(p for _, p in spec) else v)
    return np.concatenate(padded_np, axis=0)


def concat_padded_tensors(tensor_dicts: List[Dict[str, Any]], pad_value: float = 0.0) -> Dict[str, Any]:
    """One dict from trajectory dicts with the same keys, rows in input order.

    * arrays (torch or numpy): dims 1..N-1 right-padded to the widest of the key, with
      ``pad_value`` (0 for ``attention_mask``), then concatenated in dim 0 (1-D ones are just
      concatenated; 0-D ones raise ``ValueError``);
    * lists: concatenated;
    * ``multi_modal_input*`` keys: lists extended per dict, a dict without the key giving one
      ``{}`` per row;
    * anything else: the first dict's value.

    ``[]`` gives ``{}``; one dict gives a shallow copy of it, unpadded. Dicts with different key
    sets raise ``ValueError``; a key mixing torch and numpy raises ``TypeError``.
    """
    if not tensor_dicts:
        return {}
    if len(tensor_dicts) == 1:
        return dict(tensor_dicts[0])
    first = set(tensor_dicts[0])
    for i, d in enumerate(tensor_dicts[1:], 1):
        if set(d) != first:
            raise ValueError(
                f"concat_padded_tensors: dict[{i}] has keys {sorted(d)}, dict[0] has {sorted(first)}"
            )
    out: Dict[str, Any] = {}
    multimodal = {k for d in tensor_dicts for k in d if is_multi_modal_key(k)}
    for key in multimodal:
        merged: List[Any] = []
        for d in tensor_dicts:
            merged.extend(d.get(key, [{} for _ in range(get_batch_size(d))]))
        out[key] = merged
    for key in tensor_dicts[0]:
        if key in multimodal:
            continue
        values = [d[key] for d in tensor_dicts]
        if _is_array(values[0]):
            out[key] = _pad_cat_dim0(key, values, 0.0 if key == "attention_mask" else pad_value)
        elif isinstance(values[0], list):
            out[key] = [item for v in values for item in v]
        else:
            out[key] = values[0]
    return out
