"""Exactly-once training over at-least-once delivery."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Dict, Iterable, List, Optional

from .batch import Batch


class _BoundedSet:
    """A set that forgets its oldest entries beyond ``capacity``."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: "OrderedDict[int, None]" = OrderedDict()

    def add(self, item: int) -> None:
        self._items[item] = None
        self._items.move_to_end(item)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def __contains__(self, item: object) -> bool:
        return item in self._items

    def __len__(self) -> int:
        return len(self._items)

    def items(self) -> List[int]:
        return list(self._items)


class Deduplicator:
    """Remembers what was trained, so that a batch delivered again is acknowledged, not trained twice.

    The engine delivers at least once: a batch not acknowledged in time comes again with the same
    id, and one pulled but not acknowledged when the collector's node was lost comes again under a
    *new* id with the same groups. Both are caught here: by batch id, and by task id (a task is one
    prompt's group; the engine never hands out a task's group twice once it is acknowledged).

    The loop::

        fresh = dedup.fresh(batch)        # None: everything in it was trained already
        if fresh is not None:
            train(fresh)
            dedup.mark_trained(fresh)      # before the acknowledgement (and in the checkpoint)
        client.ack(batch)

    Memory is bounded: the newest ``max_batches`` batch ids and ``max_tasks`` task ids are kept
    (the defaults cover far more than the engine's redelivery window). Not thread-safe.
    :meth:`state_dict` / :meth:`load_state_dict` put it in a checkpoint, so that exactly-once
    survives a trainer restart.
    """

    def __init__(self, max_batches: int = 10_000, max_tasks: int = 1_000_000) -> None:
        if max_batches < 1 or max_tasks < 1:
            raise ValueError("max_batches and max_tasks must be >= 1")
        self._batches = _BoundedSet(max_batches)
        self._tasks = _BoundedSet(max_tasks)
        self.duplicates_seen = 0

    def fresh(self, batch: Batch) -> Optional[Batch]:
        """``batch`` without the groups already trained, or None when nothing in it is new (a batch
        id seen before counts as entirely trained). The result acknowledges the whole batch."""
        if batch.batch_id in self._batches:
            self.duplicates_seen += 1
            return None
        new = [g for g in batch.groups if g.task_id not in self._tasks]
        if len(new) == len(batch.groups):
            return batch
        self.duplicates_seen += 1
        return batch.select(new) if new else None

    def seen(self, batch: Batch) -> bool:
        """Whether nothing in ``batch`` is new."""
        return self.fresh(batch) is None

    def mark_trained(self, batch: Batch) -> None:
        """Records ``batch``'s id and its groups' task ids as trained."""
        self._batches.add(batch.batch_id)
        for t in batch.task_ids:
            self._tasks.add(t)

    def __len__(self) -> int:
        return len(self._tasks)

    def state_dict(self) -> Dict[str, Any]:
        """What :meth:`load_state_dict` restores (JSON-serialisable)."""
        return {"batch_ids": self._batches.items(), "task_ids": self._tasks.items()}

    def load_state_dict(self, state: Dict[str, Iterable[int]]) -> None:
        """Restores what :meth:`state_dict` returned, on top of what is remembered now."""
        for b in state.get("batch_ids", ()):
            self._batches.add(int(b))
        for t in state.get("task_ids", ()):
            self._tasks.add(int(t))
