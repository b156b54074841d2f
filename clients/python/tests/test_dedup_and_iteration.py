"""The deduplicator and the prefetching iterator, against a scripted client (no engine needed)."""

from __future__ import annotations

import threading
import time
from typing import List, Optional

import numpy as np
import pytest

from rollout_client import Batch, BatchIterator, BatchStreamBrokenError, Deduplicator, Group


def g(task_id: int) -> Group:
    return Group(task_id, 0, (0,), (1,), 0, 0, 0, 0, {"attention_mask": np.ones((1, 3), dtype=bool)})


def test_a_batch_delivered_again_is_not_fresh() -> None:
    d = Deduplicator()
    b = Batch(7, 1, [g(1), g(2)])
    assert d.fresh(b) is b
    d.mark_trained(b)
    assert d.fresh(Batch(7, 1, [g(1), g(2)])) is None  # same id: redelivered after a lost ack
    assert d.fresh(Batch(1007, 2, [g(1), g(2)])) is None  # a new id, same tasks: the collector moved
    partly = d.fresh(Batch(1008, 2, [g(2), g(3)]))
    assert partly is not None and partly.task_ids == [3] and partly.ack_task_ids == (2, 3)
    assert d.duplicates_seen == 3


def test_memory_is_bounded_and_state_survives_a_restart() -> None:
    d = Deduplicator(max_batches=3, max_tasks=5)
    for i in range(10):
        d.mark_trained(Batch(i, 0, [g(i)]))
    assert len(d) == 5 and d.fresh(Batch(0, 0, [g(0)])) is not None  # the oldest are forgotten
    restored = Deduplicator()
    restored.load_state_dict(d.state_dict())
    assert restored.fresh(Batch(9, 0, [g(9)])) is None and restored.fresh(Batch(99, 0, [g(8)])) is None


class ScriptedClient:
    """Hands out batches 0, 1, 2, ... (a stream break at the ids in ``broken``) and counts pulls."""

    def __init__(self, broken: tuple = (), repeat_of: Optional[int] = None, limit: int = 1000) -> None:
        self.pulled: List[int] = []
        self.acked: List[int] = []
        self.broken = set(broken)
        self.limit = limit
        self.lock = threading.Lock()

    def next_batch(self, wait: Optional[float] = None) -> Optional[Batch]:
        with self.lock:
            n = len(self.pulled)
            if n >= self.limit:
                pass
            else:
                self.pulled.append(n)
                if n in self.broken:
                    raise BatchStreamBrokenError("http://stub", n, 10, "cut")
                return Batch(n, 0, [g(n % 3)])
        time.sleep(min(wait or 0.05, 0.05))  # the scripted "long poll" of an empty engine
        return None

    def ack(self, batch: Batch) -> bool:
        self.acked.append(batch.batch_id)
        return True


def wait_until(cond, deadline_s: float = 5.0) -> None:
    end = time.monotonic() + deadline_s
    while not cond():
        assert time.monotonic() < end, "condition not met in time"
        time.sleep(0.01)


def test_prefetch_pulls_ahead_at_most_its_bound_and_close_stops_it() -> None:
    c = ScriptedClient()
    it = BatchIterator(c, prefetch=2)  # type: ignore[arg-type]
    try:
        wait_until(lambda: len(c.pulled) == 2)
        time.sleep(0.2)  # give a runaway puller the chance to show itself
        assert len(c.pulled) == 2
        first = next(it)
        assert first.batch_id == 0
        wait_until(lambda: len(c.pulled) == 3)
        assert [next(it).batch_id, next(it).batch_id] == [1, 2]
    finally:
        it.close()
    assert not it._thread.is_alive()
    with pytest.raises(StopIteration):
        next(it)


def test_a_broken_stream_is_skipped_and_duplicates_are_acknowledged_not_handed_over() -> None:
    c = ScriptedClient(broken=(1,))
    d = Deduplicator()
    with BatchIterator(c, prefetch=1, deduplicator=d) as it:  # type: ignore[arg-type]
        got = []
        for b in it:
            got.append(b.batch_id)
            d.mark_trained(b)
            c.ack(b)
            if len(got) == 3:
                break
    # 0 (task 0), 1 broken, 2 (task 2), 3 (task 0 again: trained) acknowledged and skipped, 4 (task 1)
    assert got == [0, 2, 4]
    assert 3 in c.acked


def test_wait_ends_the_iteration_when_nothing_comes() -> None:
    c = ScriptedClient(limit=1)
    with BatchIterator(c, prefetch=1, wait=0.3) as it:  # type: ignore[arg-type]
        assert [b.batch_id for b in it] == [0]


def test_an_iterator_dropped_without_close_stops_its_thread() -> None:
    import gc

    c = ScriptedClient()
    it = BatchIterator(c, prefetch=1)  # type: ignore[arg-type]
    thread = it._thread
    wait_until(lambda: len(c.pulled) == 1)
    del it
    gc.collect()
    thread.join(5.0)
    assert not thread.is_alive()
