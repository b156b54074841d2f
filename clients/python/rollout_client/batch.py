"""Batches as the trainer sees them: groups of numpy arrays, collated, split and converted.

A :class:`Group` is one prompt's rows (GRPO: its samples) with the versions the engine recorded; a
:class:`Batch` is the groups the engine handed out together under one id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: The one key padded with -1 instead of 0 (padding must not look like weight version 0).
MINUS_ONE_PADDED_KEY = "versions"


@dataclass(frozen=True)
class Group:
    """One prompt's rows: batch-first tensors (``input_ids``, ``attention_mask``, ``loss_mask``,
    ``logprobs``, ``versions``, ``rewards``, ...) and where and when they were generated.

    ``slot_row_counts[i]`` consecutive rows come from slot ``slot_indices[i]``. ``head_version`` is
    the oldest weight version of any token in the group.
    """

    task_id: int
    attempt: int
    slot_indices: Tuple[int, ...]
    slot_row_counts: Tuple[int, ...]
    dispatch_version: int
    head_version: int
    tail_version: int
    completion_version: int
    tensors: Dict[str, np.ndarray]
    #: The memory block the tensors live in (large groups only; see ``RolloutClient.recycle``).
    block: Optional[Any] = field(default=None, repr=False, compare=False)

    @property
    def rows(self) -> int:
        """The number of rows: dim 0 of the first tensor of rank >= 1 (0 when there is none)."""
        for a in self.tensors.values():
            if a.ndim >= 1:
                return int(a.shape[0])
        return 0

    @property
    def tokens(self) -> int:
        """Valid tokens: the sum of ``attention_mask`` (rows x width when there is none)."""
        mask = self.tensors.get("attention_mask")
        if mask is not None:
            return int(np.count_nonzero(mask))
        ids = self.tensors.get("input_ids")
        return int(ids.size) if ids is not None else 0

    def __getitem__(self, key: str) -> np.ndarray:
        return self.tensors[key]


@dataclass(frozen=True)
class Batch:
    """The groups handed out under ``batch_id``, at engine weight version ``version``.

    ``ack_task_ids`` are the task ids an acknowledgement of this batch sends: those of every group
    the engine handed out, also when this object holds only some of them (a shard from
    :meth:`split`, or what a :class:`~rollout_client.Deduplicator` left).
    """

    batch_id: int
    version: int
    groups: List[Group]
    ack_task_ids: Tuple[int, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.ack_task_ids:
            object.__setattr__(self, "ack_task_ids", tuple(g.task_id for g in self.groups))

    @property
    def task_ids(self) -> List[int]:
        """The task ids of this object's groups, in group order."""
        return [g.task_id for g in self.groups]

    @property
    def rows(self) -> int:
        """Rows over all groups."""
        return sum(g.rows for g in self.groups)

    @property
    def tokens(self) -> int:
        """Valid tokens over all groups (see :attr:`Group.tokens`)."""
        return sum(g.tokens for g in self.groups)

    @property
    def nbytes(self) -> int:
        """Bytes of tensor data over all groups."""
        return sum(a.nbytes for g in self.groups for a in g.tensors.values())

    def __len__(self) -> int:
        return len(self.groups)

    def __iter__(self) -> Iterator[Group]:
        return iter(self.groups)

    def staleness(self) -> np.ndarray:
        """Per group, in group order: ``version - head_version`` (int32), how many versions the
        group's oldest token is behind the weights at hand-out."""
        return np.array([self.version - g.head_version for g in self.groups], dtype=np.int32)

    def select(self, groups: Sequence[Group]) -> "Batch":
        """The same batch (id, version, acknowledgement ids) holding only ``groups``."""
        return Batch(self.batch_id, self.version, list(groups), self.ack_task_ids)

    def collate(self) -> Dict[str, np.ndarray]:
        """One dict over all groups, as the engine's ``TensorDicts.concatPadded``.

        Keys in the first group's order. Rank-2 tensors are right-padded in dim 1 to the widest of
        their key and concatenated in dim 0 (group order = row order); the pad is -1 for
        ``versions`` and 0 (False) for every other key. Rank-1 tensors are concatenated, rank-0
        tensors (one per group) stacked into a vector. A batch of one group returns that group's
        arrays unchanged (rank-0 ones stay scalars), an empty batch ``{}``.

        Raises ``ValueError`` when groups differ in key set, or a key in dtype or rank.
        """
        return concat_padded([g.tensors for g in self.groups])

    def to_torch(self, device: Optional[Any] = None, int64: bool = False) -> Dict[str, "torch.Tensor"]:
        """:meth:`collate` as torch tensors on ``device`` (CPU tensors share the numpy memory).

        int32 stays int32 and bool stays bool unless ``int64`` is True (then int32 becomes int64,
        as embedding layers and ``gather`` want). Needs torch.
        """
        import torch

        out: Dict[str, torch.Tensor] = {}
        for key, a in self.collate().items():
            t = torch.from_numpy(np.ascontiguousarray(a))
            if int64 and t.dtype == torch.int32:
                t = t.to(torch.int64)
            out[key] = t if device is None else t.to(device)
        return out

    def split(self, n: int) -> List["Batch"]:
        """``n`` shards with about equal token counts, whole groups together (GRPO normalises within
        a group). Greedy: the largest group first, each to the shard with the fewest tokens so far;
        within a shard groups keep their batch order. Shards may be empty when there are fewer
        groups than ``n``. Every shard acknowledges the whole batch (:attr:`ack_task_ids`).
        """
        if n < 1:
            raise ValueError(f"split: n must be >= 1, got {n}")
        loads = [0] * n
        members: List[List[int]] = [[] for _ in range(n)]
        order = sorted(range(len(self.groups)), key=lambda i: (-self.groups[i].tokens, i))
        for i in order:
            s = min(range(n), key=lambda k: (loads[k], k))
            loads[s] += self.groups[i].tokens
            members[s].append(i)
        return [self.select([self.groups[i] for i in sorted(m)]) for m in members]


def concat_padded(dicts: Sequence[Dict[str, np.ndarray]]) -> Dict[str, np.ndarray]:
    """Right-pads and concatenates tensor dicts along dim 0; see :meth:`Batch.collate`."""
    if not dicts:
        return {}
    first = dicts[0]
    if len(dicts) == 1:
        return dict(first)
    keys = list(first.keys())
    for i, d in enumerate(dicts):
        if set(d.keys()) != set(keys):
            missing = sorted(set(keys) - set(d.keys()))
            extra = sorted(set(d.keys()) - set(keys))
            raise ValueError(f"group {i} has other keys than group 0: missing {missing}, extra {extra}")
    out: Dict[str, np.ndarray] = {}
    for key in keys:
        parts = [d[key] for d in dicts]
        for i, p in enumerate(parts):
            if p.dtype != parts[0].dtype or p.ndim != parts[0].ndim:
                raise ValueError(
                    f"tensor '{key}': group {i} has {p.dtype}{list(p.shape)} but group 0 has "
                    f"{parts[0].dtype}{list(parts[0].shape)} (dtype and rank must agree to concatenate)"
                )
        rank = parts[0].ndim
        if rank == 0:
            out[key] = np.stack(parts)
        elif rank == 1:
            out[key] = np.concatenate(parts)
        else:
            width = max(p.shape[1] for p in parts)
            rows = sum(p.shape[0] for p in parts)
            pad = -1 if key == MINUS_ONE_PADDED_KEY else 0
            result = np.full((rows, width), pad, dtype=parts[0].dtype)
            r = 0
            for p in parts:
                result[r : r + p.shape[0], : p.shape[1]] = p
                r += p.shape[0]
            out[key] = result
    return out
